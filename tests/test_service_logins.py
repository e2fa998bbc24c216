"""Basic-auth logins of the REST services: ``[connect]``'s (the local stack's own by default,
natively and in compose) and the schema registry's (to our registry client and to the Avro
converters, by a provider reference); password files; masked when printed."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from cdcmirror.bootstrap.connector import converter_settings
from cdcmirror.clients.connect import ConnectClient
from cdcmirror.config import load_config
from cdcmirror.config.masking import redacted
from cdcmirror.config.settings import Connect
from cdcmirror.connectors import write_secret_file
from cdcmirror.exceptions import ConfigError
from cdcmirror.stack import layout
from cdcmirror.stack_login import ensure_login, login_file

COMPOSE = Path(__file__).parents[1] / "compose"


def test_default_login_is_the_one_the_local_stack_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No fixed, published password (issue 67, item 9): each stack makes its own, kept
    owner-only in its directory, and the default ``[connect]`` login is that one."""
    monkeypatch.setenv("CDCMIRROR_STACK_DIR", str(tmp_path / "stack"))
    config = load_config(environ={}, cwd=tmp_path)
    assert config.connect.auth == ("cdcmirror", ""), "no stack here yet: no password"
    login = ensure_login()
    assert login[0] == "cdcmirror" and len(login[1]) >= 40 and login[1] != "cdcmirror-local-only"
    assert ensure_login() == login, "made once, then kept"
    assert (login_file().stat().st_mode & 0o777) == 0o600
    assert load_config(environ={}, cwd=tmp_path).connect.auth == login
    monkeypatch.setenv("CDCMIRROR_STACK_DIR", str(tmp_path / "another"))
    assert ensure_login() != login, "each stack its own"
    assert layout.connect_users(*login) == "{}={}\n".format(*login)
    jaas = layout.connect_jaas(Path("/s/users.properties"))
    assert 'PropertyFileLoginModule required file="/s/users.properties";' in jaas
    assert jaas.startswith("KafkaConnect {")


def test_password_file_replaces_the_default(tmp_path: Path) -> None:
    (tmp_path / "connect.secret").write_text("rest-pw\n")
    env = {
        "CDCMIRROR_CONNECT__USERNAME": "ops",
        "CDCMIRROR_CONNECT__PASSWORD_FILE": "connect.secret",
    }
    config = load_config(environ=env, cwd=tmp_path)
    assert config.connect.auth == ("ops", "rest-pw")
    assert "rest-pw" not in str(redacted(config)) and "rest-pw" not in repr(config.connect)
    assert _authorization_sent(config.connect) == "Basic b3BzOnJlc3QtcHc="


def test_password_and_its_file_together_are_refused(tmp_path: Path) -> None:
    env = {"CDCMIRROR_CONNECT__PASSWORD": "a", "CDCMIRROR_CONNECT__PASSWORD_FILE": "f"}
    with pytest.raises(ConfigError, match="both set"):
        load_config(environ=env, cwd=tmp_path)


def test_no_user_name_sends_no_login(tmp_path: Path) -> None:
    config = load_config(environ={"CDCMIRROR_CONNECT__USERNAME": ""}, cwd=tmp_path)
    assert config.connect.auth is None
    assert _authorization_sent(config.connect) is None


def _authorization_sent(connect: Connect) -> str | None:
    """The ``Authorization`` header the configured client sends, as a loopback HTTP server
    standing in for Connect receives it."""
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            body = b'{"name": "c"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert ConnectClient(url, 10, connect.auth).config("c") == {"name": "c"}
    finally:
        thread.join(10)
        server.server_close()
    assert len(seen) == 1
    return seen[0]


REGISTRY = {
    "CDCMIRROR_KAFKA__FORMAT": "avro",
    "CDCMIRROR_KAFKA__SCHEMA_REGISTRY_USERNAME": "sr-user",
    "CDCMIRROR_KAFKA__SCHEMA_REGISTRY_PASSWORD": "sr-pw",
}


def test_registry_login_reaches_both_converters_as_a_reference(tmp_path: Path) -> None:
    apicurio = load_config(environ=REGISTRY, cwd=tmp_path).kafka
    assert apicurio.registry_auth == ("sr-user", "sr-pw")
    s = converter_settings(apicurio, "${file:/s:registry_password}")
    for side in ("key", "value"):
        assert s[f"{side}.converter.apicurio.auth.username"] == "sr-user"
        assert s[f"{side}.converter.apicurio.auth.password"] == "${file:/s:registry_password}"
    env = {**REGISTRY, "CDCMIRROR_KAFKA__SCHEMA_REGISTRY_URL": "https://sr.example"}
    confluent = load_config(environ=env, cwd=tmp_path).kafka
    s = converter_settings(confluent, "${env:P}")
    assert s["value.converter.basic.auth.credentials.source"] == "USER_INFO"
    assert s["value.converter.basic.auth.user.info"] == "sr-user:${env:P}"
    assert "sr-pw" not in str(s)
    config = load_config(environ=REGISTRY, cwd=tmp_path)
    assert "sr-pw" not in str(redacted(config)) and "sr-pw" not in repr(config.kafka)


def test_no_registry_user_sends_no_login(tmp_path: Path) -> None:
    kafka = load_config(environ={"CDCMIRROR_KAFKA__FORMAT": "avro"}, cwd=tmp_path).kafka
    assert kafka.registry_auth is None
    assert not any("auth" in k for k in converter_settings(kafka, "${env:P}"))


def test_secret_file_holds_each_password_given(tmp_path: Path) -> None:
    path = write_secret_file(tmp_path / "s", "db", "", "sr")
    assert path.read_text() == "password=db\nregistry_password=sr\n"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
