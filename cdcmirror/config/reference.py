"""The reference of every setting, written from the declaration (``settings.py``): what
``docs/reference/configuration.md`` holds and ``cdcmirror config reference`` prints. Pure."""

from __future__ import annotations

import json
from typing import Any

from cdcmirror.config.load import ENV_PREFIX, choices_of, kind_of
from cdcmirror.config.masking import secret_keys
from cdcmirror.config.settings import SECTIONS, Section

HEADER = """# Settings

Every setting of cdcmirror: its TOML key, the variable that overrides it, its type and
default. Written from `cdcmirror/config/settings.py` (`make docs`, or
`cdcmirror config reference`); a test fails when the two differ, so edit the declaration,
not this file.

A string key can also be read from a file: `<key>_file = "PATH"` in the TOML file, or the
key's variable with `_FILE` appended. Lists take a comma-separated variable; a table
(`[iceberg.catalog]`, `[spark.conf]`) takes one variable per key inside it
(`CDCMIRROR_ICEBERG__CATALOG__URI`). Secrets are masked by `cdcmirror config show`.
"""


def _type(section: type[Section], key: str) -> str:
    kind = kind_of(section, key)
    if kind == "choice":
        return " \\| ".join(f"`{c}`" for c in choices_of(section, key))
    return {"list": "list of strings", "table": "table"}.get(kind, kind)


def _default(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    if value == "" or value == {} or value == []:
        return "empty"
    return f"`{json.dumps(value)}`" if not isinstance(value, bool) else f"`{str(value).lower()}`"


def reference_markdown() -> str:
    """The whole reference, Markdown."""
    parts = [HEADER.rstrip("\n")]
    for section in SECTIONS:
        secrets = secret_keys(section)
        parts.append(f"\n## `[{section.NAME}]`\n\n{section.DOC}\n")
        parts.append("| key | variable | type | default | what it does |")
        parts.append("| --- | --- | --- | --- | --- |")
        for key, info in section.model_fields.items():
            variable = f"{ENV_PREFIX}{section.NAME.upper()}__{key.upper()}"
            doc = (info.description or "") + (" Secret." if key in secrets else "")
            default = _default(info.get_default(call_default_factory=True))
            row = (f"`{key}`", f"`{variable}`", _type(section, key), default, doc)
            parts.append("| " + " | ".join(row) + " |")
    parts.append(
        "\n## `[[streams]]`\n\nPlain event topics appended (or upserted by key) beside the "
        "CDC tables, one entry per table; `CDCMIRROR_STREAMS__<N>__<KEY>` overrides entry N. "
        "Their keys are those of [Event streams](../concepts/streams.md).\n"
    )
    return "\n".join(parts)
