"""Services secured as production runs them. Kafka: the stack's SASL_SSL listener (TLS with
its own CA, SCRAM-SHA-512 logins); a MariaDB table (Avro, with a schema-registry login) is
bootstrapped and mirrored with every cdcmirror client going through that listener (the
mirror's Spark Kafka source, confluent-kafka for offsets and checks, the connector's
schema-history producer and consumer), and ends equal to the source; a wrong password stops
`check` and `mirror` with exit 2, naming Kafka. Connect: its REST API asks for a basic-auth
login."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdcmirror.clients.connect import ConnectClient
from cdcmirror.exceptions import ConfigError
from cdcmirror.stack import layout, tls
from cdcmirror.stack.control import Stack
from support import mirror_scenarios as sc
from support import services
from support.bootstrap_env import run_cli
from support.mirror_env import run_mirror_process
from support.mirror_fixture import maria_mirrored
from support.spark import SparkWorld

SECURE = f"127.0.0.1:{layout.SECURE_PORT}"


def _secret(directory: Path, name: str, password: str) -> Path:
    path = directory / name
    path.write_text(password + "\n")
    path.chmod(0o600)
    return path


def test_mariadb_mirrors_through_sasl_ssl(
    stack: Stack, mariadb: None, spark_world: SparkWorld
) -> None:
    work = spark_world.config.base_dir
    kafka = {
        "bootstrap_servers": SECURE,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": tls.SCRAM_MECHANISM,
        "sasl_username": tls.SCRAM_USER,
        "sasl_password_file": str(_secret(work, "kafka.secret", tls.SCRAM_PASSWORD)),
        "ssl_ca_location": str(tls.ca_file(stack.tls_dir)),
        # a registry login: the local registry does not check it (it would need an OIDC
        # server), but its client and Apicurio's converter must take it and go on working
        "schema_registry_username": "registry-user",
        "schema_registry_password_file": str(_secret(work, "registry.secret", "sr-secret")),
    }
    mirrored = maria_mirrored(spark_world, 300, kafka_format="avro", kafka=kafka)
    m = next(mirrored)
    try:
        name = f"cdcmirror-{m.name}"
        connector = services.connect_client().config(name)
        assert connector["schema.history.internal.producer.security.protocol"] == "SASL_SSL"
        assert connector["value.converter.apicurio.auth.username"] == "registry-user"
        for secret in (tls.SCRAM_PASSWORD, "sr-secret"):
            assert secret not in str(connector)  # provider references
        m.workload.run(400)
        sc.settle(m)
        job = run_mirror_process(m.config_path)  # its own process: its whole log to read
        assert job.returncode == 0, job.stderr[-3000:]
        for secret in (tls.SCRAM_PASSWORD, "sr-secret"):
            assert secret not in job.stderr + job.stdout  # Spark hides the JAAS line
        assert m.assert_same() > 0
        status = services.connect_client().status(name)
        assert {t["state"] for t in status["tasks"]} == {"RUNNING"}, status

        check = run_cli(m.config_path, "check")
        assert check.exit_code == 0, check.output
        assert f"kafka    ok  {SECURE}" in check.output

        wrong = {"CDCMIRROR_KAFKA__SASL_PASSWORD_FILE": str(_secret(work, "bad", "nope"))}
        check = run_cli(m.config_path, "check", env=wrong)
        assert check.exit_code == 2, check.output
        assert f"Kafka at {SECURE} refused cdcmirror's SASL_SSL login as 'cdcmirror'" in (
            check.output
        )
        assert "invalid credentials" in check.output and "nope" not in check.output
        job = run_mirror_process(m.config_path, env=wrong, timeout=180)
        assert job.returncode == 2, job.stderr[-3000:]
        assert f"Kafka at {SECURE} refused" in job.stderr and "nope" not in job.stderr

        untrusted = {"CDCMIRROR_KAFKA__SSL_CA_LOCATION": ""}  # the system's CAs
        check = run_cli(m.config_path, "check", env=untrusted)
        assert check.exit_code == 2, check.output
        assert "certificate verify failed" in check.output
    finally:
        mirrored.close()


def test_connect_rest_api_asks_for_a_login(stack: Stack, tmp_path: Path) -> None:
    """The stack's Connect answers only with its login: the default config has it; a wrong
    password or none is exit 2 naming Connect and the keys to fix, the password nowhere."""
    config = tmp_path / "cdcmirror.toml"
    config.write_text("")
    ok = run_cli(config, "check")
    assert "connect  ok  http://127.0.0.1:8083" in ok.output, ok.output
    wrong = run_cli(config, "check", env={"CDCMIRROR_CONNECT__PASSWORD": "nope"})
    assert wrong.exit_code == 2, wrong.output
    assert "Kafka Connect at http://127.0.0.1:8083 refused cdcmirror's login (HTTP 401)" in (
        wrong.output
    )
    assert "connect.password" in wrong.output and "nope" not in wrong.output
    none = run_cli(config, "check", env={"CDCMIRROR_CONNECT__USERNAME": ""})
    assert none.exit_code == 2, none.output
    assert "refused cdcmirror's login (HTTP 401)" in none.output
    with pytest.raises(ConfigError, match="HTTP 401"):
        ConnectClient(services.CONNECT).names()
    assert isinstance(services.connect_client().names(), list)
    # the old fixed, published password opens nothing (each stack makes its own)
    fixed = run_cli(config, "check", env={"CDCMIRROR_CONNECT__PASSWORD": "cdcmirror-local-only"})
    assert fixed.exit_code == 2 and "HTTP 401" in fixed.output, fixed.output


def _validated_text(hostname: str) -> str:
    """Connect's validate errors for a MariaDB connector whose host is ``hostname`` (its
    error quotes the host it could not reach)."""
    client = services.connect_client()
    config = {
        "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "name": services.unique("probe"),
        "topic.prefix": "probe",
        "database.hostname": hostname,
        "database.port": "3306",
        "database.user": "nobody",
        "database.password": "x",
        "database.server.id": "5",
    }
    return "\n".join(client.validate(config))


def test_connect_providers_read_only_cdcmirror_secrets(stack: Stack, tmp_path: Path) -> None:
    """Issue 67, item 9: whoever may validate a connector could read any file or variable of
    Connect's process through ``${file:...}`` / ``${env:...}`` in its config, then the error
    text. The worker reads files of the secrets directory and cdcmirror's variables only."""
    import os
    import uuid

    from cdcmirror.stack_login import ensure_login, login_file, secrets_dir

    token = uuid.uuid4().hex
    outside = _secret(tmp_path, "outside.properties", f"k=outside-{token}")
    inside = secrets_dir() / f"probe-{token}.properties"
    inside.write_text(f"k=inside-{token}\n")
    inside.chmod(0o600)
    try:
        # the control: a reference inside the directory is resolved (and shows in the text)
        assert f"inside-{token}" in _validated_text(f"${{file:{inside}:k}}")
        (tmp_path / "secrets").mkdir()
        beside = _secret(tmp_path / "secrets", "k.properties", f"k=outside-{token}")
        files = [
            outside,
            Path(f"{secrets_dir()}/../../../../{outside.relative_to('/')}"),  # out by ..
            beside,  # a directory of the same name elsewhere
        ]
        for path in files:
            text = _validated_text(f"${{file:{path}:k}}")
            assert f"outside-{token}" not in text, (path, text)
        login = _validated_text(f"${{file:{login_file()}:x}}")
        assert ensure_login()[1] not in login, "the REST password is no secret file"
        for name in ("PATH", "HOME"):
            text = _validated_text(f"${{env:{name}}}")
            assert os.environ[name] not in text, (name, text)
    finally:
        inside.unlink()
