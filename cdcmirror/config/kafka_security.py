"""How every Kafka client of cdcmirror logs in to the brokers: one ``[kafka]`` section,
written out in each client's own words. Pure.

Three kinds of clients talk to the brokers: confluent-kafka (librdkafka: the mirror's offset
checks, reconcile, teardown, stream sampling), Java clients given properties (Spark's Kafka
source, as ``kafka.``-prefixed options) and the Debezium connector's schema-history producer
and consumer (MySQL/MariaDB, in the connector config, where the password is a Connect
config-provider reference so that it never sits in clear in Connect's config topic).
"""

from __future__ import annotations

from cdcmirror.config.settings import Kafka

JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
HISTORY_PREFIXES = ("schema.history.internal.producer.", "schema.history.internal.consumer.")


def librdkafka_conf(kafka: Kafka) -> dict[str, str]:
    """The confluent-kafka client settings: brokers, protocol, login, CA.

    >>> k = Kafka(bootstrap_servers="b:9094", security_protocol="SASL_SSL", sasl_username="u",
    ...           sasl_password="p", ssl_ca_location="/ca.pem")
    >>> sorted(librdkafka_conf(k).items())  # doctest: +NORMALIZE_WHITESPACE
    [('bootstrap.servers', 'b:9094'), ('sasl.mechanism', 'SCRAM-SHA-512'),
     ('sasl.password', 'p'), ('sasl.username', 'u'), ('security.protocol', 'SASL_SSL'),
     ('ssl.ca.location', '/ca.pem')]
    >>> librdkafka_conf(Kafka(bootstrap_servers="b:9092"))
    {'bootstrap.servers': 'b:9092'}
    """
    conf = {"bootstrap.servers": kafka.bootstrap_servers}
    if kafka.security_protocol == "PLAINTEXT":
        return conf
    conf["security.protocol"] = kafka.security_protocol
    if kafka.sasl:
        conf["sasl.mechanism"] = kafka.sasl_mechanism
        conf["sasl.username"] = kafka.sasl_username
        conf["sasl.password"] = kafka.sasl_password
    if kafka.tls and kafka.ssl_ca_location:
        conf["ssl.ca.location"] = kafka.ssl_ca_location
    return conf


def jaas_config(mechanism: str, user: str, password: str) -> str:
    """The JAAS line of a Java client; quotes and backslashes escaped.

    >>> jaas_config("PLAIN", "u", 'p"w').split(" required ")[1]
    'username="u" password="p\\\\"w";'
    """

    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    login = f"username={quoted(user)} password={quoted(password)}"
    return f"{JAAS_MODULES[mechanism]} required {login};"


def java_client_conf(kafka: Kafka, password: str | None = None) -> dict[str, str]:
    """The security settings of a Java Kafka client (without the brokers); ``password``
    stands in for the configured one (a provider reference in a connector config).

    >>> k = Kafka(bootstrap_servers="b:9094", security_protocol="SASL_SSL", sasl_username="u",
    ...           sasl_password="p", ssl_ca_location="/ca.pem")
    >>> sorted(java_client_conf(k, "${env:P}"))  # doctest: +NORMALIZE_WHITESPACE
    ['sasl.jaas.config', 'sasl.mechanism', 'security.protocol', 'ssl.truststore.location',
     'ssl.truststore.type']
    """
    if kafka.security_protocol == "PLAINTEXT":
        return {}
    conf: dict[str, str] = {"security.protocol": kafka.security_protocol}
    if kafka.sasl:
        secret = kafka.sasl_password if password is None else password
        conf["sasl.mechanism"] = kafka.sasl_mechanism
        conf["sasl.jaas.config"] = jaas_config(kafka.sasl_mechanism, kafka.sasl_username, secret)
    if kafka.tls and kafka.ssl_ca_location:
        conf["ssl.truststore.type"] = "PEM"
        conf["ssl.truststore.location"] = kafka.ssl_ca_location
    return conf


def spark_kafka_options(kafka: Kafka) -> dict[str, str]:
    """Spark's Kafka source options: the brokers and the ``kafka.``-prefixed client
    settings. Spark redacts the JAAS line in its logs and UI (the value names a password).

    >>> spark_kafka_options(Kafka(bootstrap_servers="b:9092"))
    {'kafka.bootstrap.servers': 'b:9092'}
    """
    conf = {"bootstrap.servers": kafka.bootstrap_servers, **java_client_conf(kafka)}
    return {f"kafka.{k}": v for k, v in conf.items()}


def history_client_settings(kafka: Kafka, password_ref: str) -> dict[str, str]:
    """The Debezium schema history's producer and consumer settings (MySQL/MariaDB)."""
    conf = java_client_conf(kafka, password_ref)
    return {f"{prefix}{k}": v for prefix in HISTORY_PREFIXES for k, v in conf.items()}
