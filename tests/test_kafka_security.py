"""``[kafka]`` login settings: validated, read from a file, masked, and written out in each
client's words (librdkafka, Spark's Kafka source, the connector's schema history)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdcmirror.bootstrap.connector import plan_connector
from cdcmirror.config import load_config
from cdcmirror.config.kafka_security import librdkafka_conf, spark_kafka_options
from cdcmirror.config.masking import redacted
from cdcmirror.connectors import write_secret_file
from cdcmirror.exceptions import ConfigError
from cdcmirror.source.connection import source_url
from cdcmirror.source.type_parsing import parse_mysql_type
from cdcmirror.source_model import SourceCatalog, SourceColumn, SourceTable

SASL = {
    "CDCMIRROR_KAFKA__BOOTSTRAP_SERVERS": "127.0.0.1:9094",
    "CDCMIRROR_KAFKA__SECURITY_PROTOCOL": "SASL_SSL",
    "CDCMIRROR_KAFKA__SASL_USERNAME": "mirror",
    "CDCMIRROR_KAFKA__SSL_CA_LOCATION": "/etc/ca.pem",
}


def test_sasl_without_a_password_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"kafka\.sasl_password"):
        load_config(environ=SASL, cwd=tmp_path)


def test_password_from_a_file_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "kafka.secret").write_text("s3cret-pw\n")
    (tmp_path / "cdcmirror.toml").write_text('[kafka]\nsasl_password_file = "kafka.secret"\n')
    config = load_config(environ=SASL, cwd=tmp_path)
    assert config.kafka.sasl_password == "s3cret-pw"
    conf = librdkafka_conf(config.kafka)
    assert conf["sasl.password"] == "s3cret-pw"
    assert conf["security.protocol"] == "SASL_SSL"
    assert conf["ssl.ca.location"] == "/etc/ca.pem"
    shown = str(redacted(config))
    assert "s3cret-pw" not in shown and "s3cret-pw" not in repr(config.kafka)


def test_password_file_and_password_together_are_refused(tmp_path: Path) -> None:
    env = {
        **SASL,
        "CDCMIRROR_KAFKA__SASL_PASSWORD": "a",
        "CDCMIRROR_KAFKA__SASL_PASSWORD_FILE": "f",
    }
    with pytest.raises(ConfigError, match="both set"):
        load_config(environ=env, cwd=tmp_path)


def test_unreadable_password_file_names_it(tmp_path: Path) -> None:
    env = {**SASL, "CDCMIRROR_KAFKA__SASL_PASSWORD_FILE": "missing.secret"}
    with pytest.raises(ConfigError, match=r"missing\.secret cannot be read"):
        load_config(environ=env, cwd=tmp_path)


def test_unknown_protocol_is_refused(tmp_path: Path) -> None:
    env = {"CDCMIRROR_KAFKA__SECURITY_PROTOCOL": "KERBEROS"}
    with pytest.raises(ConfigError, match="SASL_SSL"):
        load_config(environ=env, cwd=tmp_path)


def test_spark_options_carry_login_and_truststore(tmp_path: Path) -> None:
    config = load_config(environ={**SASL, "CDCMIRROR_KAFKA__SASL_PASSWORD": "pw"}, cwd=tmp_path)
    options = spark_kafka_options(config.kafka)
    assert options["kafka.bootstrap.servers"] == "127.0.0.1:9094"
    assert options["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert options["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="mirror" password="pw";'
    )
    assert options["kafka.ssl.truststore.type"] == "PEM"
    assert options["kafka.ssl.truststore.location"] == "/etc/ca.pem"


def _maria() -> SourceCatalog:
    cols = (SourceColumn("id", parse_mysql_type("int"), nullable=False),)
    table = SourceTable("shop", "orders", cols, ("id",), "primary key")
    return SourceCatalog("mysql", "mariadb", "10.11", "shop", "cdc", (table,), (), None)


@pytest.mark.parametrize("mode", ["file", "env"])
def test_schema_history_logs_in_through_a_provider_reference(tmp_path: Path, mode: str) -> None:
    env = {
        **SASL,
        "CDCMIRROR_KAFKA__SASL_PASSWORD": "kafka-pw",
        "CDCMIRROR_SOURCE__DIALECT": "mysql",
        "CDCMIRROR_SOURCE__URL": "mysql://cdc@127.0.0.1:3306/shop",
        "CDCMIRROR_SOURCE__PASSWORD": "db-pw",
        "CDCMIRROR_CONNECT__SECRETS": mode,
    }
    config = load_config(environ=env, cwd=tmp_path)
    secret = tmp_path / "s.properties"
    plan = plan_connector(config, _maria(), secret, source_url(config.source))
    ref = (
        f"${{file:{secret}:kafka_password}}"
        if mode == "file"
        else "${env:CDCMIRROR_KAFKA__SASL_PASSWORD}"
    )
    for side in ("producer", "consumer"):
        prefix = f"schema.history.internal.{side}."
        assert plan.config[prefix + "security.protocol"] == "SASL_SSL"
        assert f'password="{ref}"' in plan.config[prefix + "sasl.jaas.config"]
        assert plan.config[prefix + "ssl.truststore.location"] == "/etc/ca.pem"
    assert "kafka-pw" not in str(plan.config) and "kafka-pw" not in repr(plan)
    write_secret_file(secret, plan.password, plan.kafka_password)
    assert secret.read_text() == "password=db-pw\nkafka_password=kafka-pw\n"


def test_plaintext_history_has_no_login(tmp_path: Path) -> None:
    env = {"CDCMIRROR_SOURCE__DIALECT": "mysql", "CDCMIRROR_SOURCE__URL": "mysql://c@h/shop"}
    config = load_config(environ=env, cwd=tmp_path)
    plan = plan_connector(config, _maria(), tmp_path / "s", source_url(config.source))
    assert not any(k.startswith("schema.history.internal.producer.") for k in plan.config)
    assert plan.kafka_password == ""
