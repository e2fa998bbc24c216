"""The configured Kafka, as the commands reach it: the client settings of ``[kafka]`` and a
clear stop when the brokers refuse cdcmirror's login."""

from __future__ import annotations

from typing import Any

from cdcmirror.config import Config
from cdcmirror.config.kafka_security import librdkafka_conf, spark_kafka_options
from cdcmirror.exceptions import ConfigError


def client_conf(config: Config) -> dict[str, Any]:
    """The confluent-kafka settings: brokers and login."""
    return dict(librdkafka_conf(config.kafka))


def spark_options(config: Config) -> dict[str, str]:
    return spark_kafka_options(config.kafka)


def require_login(config: Config, timeout: float = 10.0) -> None:
    """Stop (exit 2, naming Kafka and the keys to fix) when the brokers refuse the
    configured login or TLS handshake. A plaintext Kafka has no login: nothing to check
    (whether it answers is each command's own question)."""
    from cdcmirror.stack.health import kafka_problem

    kafka = config.kafka
    if kafka.security_protocol == "PLAINTEXT":
        return
    problem = kafka_problem(client_conf(config), timeout)
    if problem is None or not problem.startswith("authentication"):
        return
    who = f" as {kafka.sasl_username!r} ({kafka.sasl_mechanism})" if kafka.sasl else ""
    raise ConfigError(
        f"Kafka at {kafka.bootstrap_servers} refused cdcmirror's {kafka.security_protocol} "
        f"login{who}: {problem.split(': ', 1)[1]}. Fix kafka.sasl_username and "
        "kafka.sasl_password (or kafka.sasl_password_file), or kafka.ssl_ca_location when "
        "the brokers' certificate is not trusted"
    )
