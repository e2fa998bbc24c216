from __future__ import annotations

import re
from pathlib import Path

from cdcmirror.stack import layout


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_broker_binds_loopback_only() -> None:
    p = props(layout.broker_properties(Path("/data"), Path("/tls/ks.pem")))
    assert p["process.roles"] == "broker,controller"
    for listener in p["listeners"].split(","):
        assert "//127.0.0.1:" in listener
    assert p["transaction.state.log.replication.factor"] == "1"
    assert p["log.dirs"] == "/data"


def test_connect_worker_is_exactly_once_with_providers_on_loopback() -> None:
    p = props(layout.connect_properties(Path("/plugins"), Path("/stack/secrets")))
    assert p["exactly.once.source.support"] == "enabled"
    assert p["listeners"] == "http://127.0.0.1:8083"
    assert set(p["config.providers"].split(",")) == {"file", "env"}
    assert p["plugin.path"] == "/plugins"
    # the providers read the secrets directory and cdcmirror's variables only
    assert p["config.providers.file.param.allowed.paths"] == "/stack/secrets"
    assert p["config.providers.env.param.allowlist.pattern"] == (
        "CDCMIRROR_SOURCE__PASSWORD|CDCMIRROR_KAFKA__SASL_PASSWORD|"
        "CDCMIRROR_KAFKA__SCHEMA_REGISTRY_PASSWORD"
    )


def test_compose_worker_has_the_native_workers_settings() -> None:
    """compose/connect-distributed.properties says it is the native worker's settings: it is,
    but for addresses and paths (one worker in both: lost tasks are reassigned at once)."""
    native = props(layout.connect_properties(Path("/plugins"), Path("/secrets")))
    text = (Path(__file__).parents[1] / "compose" / "connect-distributed.properties").read_text()
    compose = props("\n".join(x for x in text.splitlines() if not x.startswith("#")))
    where = {"bootstrap.servers", "listeners", "rest.advertised.host.name", "plugin.path"}
    where.add("config.providers.file.param.allowed.paths")
    assert compose.keys() - where == native.keys() - where - {"rest.advertised.port"}
    assert {k: compose[k] for k in compose.keys() - where} == {
        k: native[k] for k in compose.keys() - where
    }
    assert native["scheduled.rebalance.max.delay.ms"] == "0"


def test_cluster_id_is_kafka_shaped() -> None:
    ids = {layout.new_cluster_id() for _ in range(20)}
    assert len(ids) == 20
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids)


def test_cluster_id_never_reads_as_an_option() -> None:
    """``kafka-storage format --cluster-id -x…`` fails (CI of 4fa4d27); 1 in 64 random ids
    began with ``-``, so of 2,000 drawn about 31 would."""
    assert not any(layout.new_cluster_id().startswith("-") for _ in range(2000))


def test_java_command_marks_the_process() -> None:
    cmd = layout.java_command(
        "java",
        layout.KAFKA,
        [Path("/a.jar"), Path("/b.jar")],
        Path("/k.properties"),
        Path("/l.properties"),
    )
    assert "-Dcdcmirror.stack=kafka" in cmd
    assert cmd[cmd.index("-cp") + 1] == "/a.jar:/b.jar"
    assert cmd[-2:] == ["kafka.Kafka", "/k.properties"]
