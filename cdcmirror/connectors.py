"""Render Debezium connector configs from the templates in ``connectors/``. Pure, but for
reading the template and writing the secret file."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from cdcmirror.config.masking import MASK
from cdcmirror.exceptions import ConfigError
from cdcmirror.paths import write_private

# the environment variables a connector config may name (``password_reference``): the only
# ones the local stack's Connect worker resolves (``stack/layout.connect_properties``)
SOURCE_PASSWORD = "CDCMIRROR_SOURCE__PASSWORD"
SASL_PASSWORD = "CDCMIRROR_KAFKA__SASL_PASSWORD"
REGISTRY_PASSWORD = "CDCMIRROR_KAFKA__SCHEMA_REGISTRY_PASSWORD"
SECRET_VARIABLES = (SOURCE_PASSWORD, SASL_PASSWORD, REGISTRY_PASSWORD)

PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
TEMPLATES = ("postgresql", "mysql", "mariadb")


def _template_text(name: str) -> str:
    if name not in TEMPLATES:
        raise ConfigError(f"no connector template {name!r}; there are {', '.join(TEMPLATES)}")
    packaged = resources.files("cdcmirror").joinpath("_connectors", f"{name}.json")
    if packaged.is_file():
        return packaged.read_text("utf-8")
    # editable install / source checkout: the templates live at the top of the repository
    return (Path(__file__).resolve().parents[1] / "connectors" / f"{name}.json").read_text("utf-8")


def render_template(text: str, params: dict[str, str]) -> dict[str, str]:
    """Fill ``{{name}}`` placeholders; every placeholder must have a value.

    >>> render_template('{"a": "{{x}}", "b": "${env:Y}"}', {"x": "1"})
    {'a': '1', 'b': '${env:Y}'}
    """
    missing = sorted({m for m in PLACEHOLDER.findall(text) if m not in params})
    if missing:
        raise ConfigError(f"connector template needs values for {', '.join(missing)}")
    filled = PLACEHOLDER.sub(lambda m: json.dumps(params[m.group(1)])[1:-1], text)
    config = json.loads(filled)
    return {str(k): str(v) for k, v in config.items()}


def render_connector(template: str, params: dict[str, str]) -> dict[str, str]:
    """The connector config for a template name (postgresql, mysql, mariadb)."""
    return render_template(_template_text(template), params)


def password_reference(
    mode: str,
    secret_file: Path | None = None,
    key: str = "password",
    env_var: str = SOURCE_PASSWORD,
) -> str:
    """What the connector config says instead of a password (``key`` in the secret file).

    >>> password_reference("env")
    '${env:CDCMIRROR_SOURCE__PASSWORD}'
    >>> password_reference("file", Path("/s.properties"), "kafka_password")
    '${file:/s.properties:kafka_password}'
    """
    if mode == "env":
        return f"${{env:{env_var}}}"
    if mode == "file":
        if secret_file is None:
            raise ConfigError("connect.secrets = 'file' needs a secret file path")
        return f"${{file:{secret_file}:{key}}}"
    raise ConfigError(f"connect.secrets = {mode!r} is not one of file, env")


def write_secret_file(
    path: Path, password: str, kafka_password: str = "", registry_password: str = ""
) -> Path:
    """Write ``password=...`` (and ``kafka_password=...``, ``registry_password=...`` when
    there are) for Connect's FileConfigProvider, readable by the owner only. A file that
    already holds the same passwords is left as it is (no churn on re-runs)."""

    def line(key: str, value: str) -> str:
        escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
        return f"{key}={escaped}\n"

    text = line("password", password)
    text += line("kafka_password", kafka_password) if kafka_password else ""
    text += line("registry_password", registry_password) if registry_password else ""
    write_private(path, text)
    return path


def masked(config: dict[str, Any]) -> dict[str, Any]:
    """A copy safe to print: any password-like value that is not a provider reference hidden.

    >>> masked({"database.password": "pw", "x": "1"})
    {'database.password': '***', 'x': '1'}
    >>> masked({"database.password": "${env:P}"})
    {'database.password': '${env:P}'}
    """
    out = {}
    for key, value in config.items():
        secret = any(w in key.lower() for w in ("password", "secret", "credential"))
        is_ref = isinstance(value, str) and value.startswith("${") and value.endswith("}")
        out[key] = MASK if secret and value and not is_ref else value
    return out
