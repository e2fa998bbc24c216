"""Plain event topics (``[[streams]]``) beside a CDC table, in the same mirror job, against
real Kafka, Spark and Iceberg: every good event appended exactly once (also after a crash
between the table's commit and Spark's checkpoint, and after a lost checkpoint), bad events
dead-lettered with the reason, new fields of an inferred stream added, a keyed stream kept
at the newest event per key."""

from __future__ import annotations

import json
import logging
import random
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from cdcmirror.stack.control import Stack
from support import mirror_scenarios as sc
from support import services
from support.bootstrap_env import run_cli
from support.mirror_env import Workload, run_mirror_process
from support.mirror_fixture import Mirrored, make_config, pg_source, prepare_schema
from support.services import register_schema
from support.spark import SparkWorld

PG_SEED = 20261125
READING = {
    "type": "record",
    "name": "Reading",
    "fields": [
        {"name": "meter", "type": "string"},
        {"name": "kwh", "type": "double"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
READING_V2 = {
    **READING,
    "fields": [*READING["fields"], {"name": "phase", "type": ["null", "int"], "default": None}],
}


def avro_value(schema_id: int, schema: dict[str, Any], event: dict[str, Any]) -> bytes:
    """An event in the Confluent wire format: magic byte, schema id, Avro body."""
    import io

    import fastavro

    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), event)
    return b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue()


TELEMETRY_SCHEMA = {
    "type": "object",
    "properties": {
        "device": {"type": "string"},
        "at": {"type": "string", "format": "date-time"},
        "temp": {"type": ["number", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}


@dataclass
class World:
    m: Mirrored  # the CDC table and the config
    clicks: str  # topic of an inferred append stream, 3 partitions
    tele: list[str]  # topics of a stream read by a pattern, with a schema file
    profiles: str  # topic of an inferred stream upserted by user_id
    readings: str  # topic of an Avro stream (schema from the registry)
    reading_id: int  # the registry id of READING
    rnd: random.Random
    sent: dict[str, list[dict[str, Any]]]  # stream -> good events produced

    @property
    def namespace(self) -> str:
        return f"{self.m.name}_mirror"

    def rows(self, table: str, columns: str = "*") -> list[Any]:
        sql = f"SELECT {columns} FROM {self.namespace}.{table}"
        return list(self.m.spark.sql(sql).collect())

    def produce(self, topic: str, values: Sequence[bytes | None], key: bytes | None = None) -> None:
        producer = Producer({"bootstrap.servers": services.KAFKA})
        for i, v in enumerate(values):
            producer.produce(topic, value=v, key=key or str(i).encode())
        assert producer.flush(30) == 0

    def clicks_batch(self, n: int, extra: dict[str, Any] | None = None) -> None:
        events = [
            {
                "user": self.rnd.randrange(1000),
                "page": f"/p/{self.rnd.randrange(50)}",
                "ms": self.rnd.random() * 100,
                "n": len(self.sent["clicks"]) + i,
                **(extra or {}),
            }
            for i in range(n)
        ]
        self.sent["clicks"] += events
        self.produce(self.clicks, [json.dumps(e).encode() for e in events])

    def dead(self) -> dict[str, str]:
        dead = f"{self.namespace}__cdcmirror.dead_letter"
        rows = self.m.spark.sql(f"SELECT value, error FROM {dead} WHERE table_name LIKE '%tele%'")
        return {bytes(r.value).decode("utf-8", "replace"): r.error for r in rows.collect()}


def _config_with_streams(config: Path, name: str, schema_file: Path) -> None:
    text = config.read_text("utf-8")
    text += f"""
[[streams]]
topic = "{name}.clicks"
table = "clicks"
schema = "infer"
partition = "day(_kafka_timestamp)"

[[streams]]
topic_pattern = "{name}\\\\.tele\\\\..*"
table = "telemetry"
schema = "{schema_file}"
partition = "hour(at)"

[[streams]]
topic = "{name}.profiles"
table = "profiles"
schema = "infer"
key_columns = ["user_id"]

[[streams]]
topic = "{name}.readings"
table = "readings"
format = "avro"
"""
    config.write_text(text, "utf-8")


@pytest.fixture(scope="module")
def world(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[World]:
    name = services.unique("streams")
    prepare_schema(name)
    source = pg_source(name)
    workload = Workload(source, PG_SEED)
    workload.run(100)
    base = spark_world.config.base_dir
    config = make_config(base, name, "postgresql", f"{name}.*", services.TEST_DATABASE)
    schema_file = base / f"{name}-telemetry.json"
    schema_file.write_text(json.dumps(TELEMETRY_SCHEMA), "utf-8")
    _config_with_streams(config, name, schema_file)
    w = World(
        Mirrored(name, source, config, spark_world.spark, workload, []),
        f"{name}.clicks",
        [f"{name}.tele.eu", f"{name}.tele.us"],
        f"{name}.profiles",
        f"{name}.readings",
        register_schema(f"{name}.readings-value", {**READING, "name": f"Reading_{name}"}),
        random.Random(PG_SEED),
        {"clicks": [], "tele": [], "profiles": []},
    )
    services.create_topic(w.clicks, 3)
    for topic in [*w.tele, w.profiles, w.readings]:
        services.create_topic(topic, 1)
    w.clicks_batch(400)
    seed = {"user_id": 0, "name": "seed", "score": 0, "_error": 0, "_rn": 0}  # fields named
    w.produce(w.profiles, [json.dumps(seed).encode()])  # like the mirror's working columns
    try:
        yield w
    finally:
        services.drop_published_schema(name, f"cdcmirror-{name}")


def test_bootstrap_dry_run_shows_the_inferred_schema_then_makes_the_tables(world: World) -> None:
    dry = run_cli(world.m.config_path, "bootstrap", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"stream {world.clicks} -> {world.namespace}.clicks" in dry.output, dry.output
    for line in ("user long", "page string", "ms double", "n long"):
        assert line in dry.output, dry.output
    done = run_cli(world.m.config_path, "bootstrap")
    assert done.exit_code == 0, done.output
    described = {
        r.col_name: r.data_type
        for r in world.m.spark.sql(f"DESCRIBE {world.namespace}.telemetry").collect()
    }
    assert described["at"] == "timestamp" and described["tags"] == "array<string>", described
    assert described["_kafka_offset"] == "bigint", described


def test_streams_and_the_cdc_table_in_one_job(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    tele_good = [
        {
            "device": f"d{i % 7}",
            "at": f"2026-11-25T10:{i % 60:02d}:00Z",
            "temp": i / 4,
            "tags": ["a"],
        }
        for i in range(120)
    ]
    bad: list[bytes] = [
        b"\xff\xfe not utf-8",
        b"[1, 2, 3]",
        json.dumps({"device": "d1", "at": "2026-11-25T10:00:00Z", "temp": "hot"}).encode(),
        json.dumps({"device": "d1", "at": "2026-11-25T10:00:00Z", "colour": "red"}).encode(),
    ]
    world.sent["tele"] += tele_good
    world.produce(world.tele[0], [json.dumps(e).encode() for e in tele_good[:60]] + bad[:2])
    world.produce(world.tele[1], [json.dumps(e).encode() for e in tele_good[60:]] + bad[2:])
    world.produce(world.tele[1], [None])  # a tombstone: no event, skipped
    profiles = [
        {"user_id": i % 30, "name": f"u{i}", "score": i, "_error": -i, "_rn": i % 7}
        for i in range(300)
    ]
    world.produce(world.profiles, [json.dumps(p).encode() for p in profiles], key=b"k")
    world.m.workload.run(300)
    sc.settle(world.m)
    with caplog.at_level(logging.INFO, logger="cdcmirror"):
        world.m.mirror()
    # the table and each stream read their own records of a batch, once: no first look
    done = [r.getMessage() for r in caplog.records if " done in " in r.getMessage()]
    assert done and all("read once, no first look" in line for line in done), done
    world.m.assert_same()  # the CDC table, mirrored by the same query
    _assert_clicks_once(world)
    tele = world.rows("telemetry", "device, temp, tags")
    assert sorted((r.device, r.temp) for r in tele) == sorted(
        (e["device"], e["temp"]) for e in tele_good
    )
    dead = world.dead()
    assert len(dead) == 4, dead
    assert dead[bad[3].decode()] == "field(s) not in the stream's schema: colour", dead
    assert "does not fit its column" in dead[bad[2].decode()], dead
    assert dead[bad[1].decode()] == "the value is not a JSON object", dead
    newest = {p["user_id"]: (p["name"], p["score"], p["_error"], p["_rn"]) for p in profiles}
    rows = world.rows("profiles", "user_id, name, score, _error, _rn")
    got = {r.user_id: (r.name, r.score, r._error, r._rn) for r in rows}
    assert got == newest


def test_a_crash_after_the_commit_appends_nothing_twice(world: World) -> None:
    world.clicks_batch(300)
    crashed = run_mirror_process(world.m.config_path, {"CDCMIRROR_FAULT": "after-commit"})
    assert crashed.returncode == 86, crashed.stderr[-3000:]
    world.clicks_batch(50)
    world.m.mirror()  # the batch again: held by the table, not appended twice
    _assert_clicks_once(world)


def test_new_fields_of_an_inferred_stream_become_columns(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.clicks_batch(40, {"campaign": "winter", "price": 12})
    with caplog.at_level(logging.INFO, logger="cdcmirror"):
        world.m.mirror()
    # a batch of event streams only: written from one read of Kafka, whose write stops at the
    # new fields; the table gains them, then the write runs again
    lines = [r.getMessage() for r in caplog.records]
    assert any("read once, no first look" in line for line in lines), lines
    assert any("new field(s) campaign" in line for line in lines), lines
    _assert_clicks_once(world)
    rows = world.rows("clicks", "n, campaign, price")
    tagged = {r.n for r in rows if r.campaign == "winter" and r.price == 12}
    assert tagged == {e["n"] for e in world.sent["clicks"] if e.get("campaign")}


def test_a_lost_checkpoint_resumes_after_what_the_table_holds(world: World) -> None:
    world.clicks_batch(100)
    crashed = run_mirror_process(world.m.config_path, {"CDCMIRROR_FAULT": "after-commit"})
    assert crashed.returncode == 86, crashed.stderr[-3000:]
    shutil.rmtree(world.m.config.path("mirror", "checkpoint_location"))
    world.clicks_batch(60)
    world.m.mirror()
    _assert_clicks_once(world)
    world.m.assert_same()


def _assert_clicks_once(world: World) -> None:
    rows = world.rows("clicks", "n, _kafka_partition, _kafka_offset, _ingested_at")
    coords = [(r._kafka_partition, r._kafka_offset) for r in rows]
    assert len(coords) == len(set(coords)), "an event was appended twice"
    assert sorted(r.n for r in rows) == sorted(e["n"] for e in world.sent["clicks"])
    assert all(r._ingested_at is not None for r in rows)
    assert len({p for p, _ in coords}) == 3, "the events of every partition"


def test_reconcile_lists_missing_and_duplicated_offsets(world: World) -> None:
    clean = run_cli(world.m.config_path, "reconcile", "--settle", "0", "--output", "json")
    assert clean.exit_code == 0, clean.output
    streams = {s["table"].split(".")[-1]: s for s in json.loads(clean.stdout)["streams"]}
    assert streams["clicks"]["status"] == "in_sync", streams["clicks"]
    assert streams["profiles"]["status"] == "not compared (keyed)", streams["profiles"]
    tele = streams["telemetry"]
    assert tele["status"] == "in_sync", tele
    assert sum(p["dead_lettered"] for p in tele["partitions"]) == 4, tele
    events = sum(p["events"] for p in streams["clicks"]["partitions"])
    assert events == len(world.sent["clicks"]), streams["clicks"]
    table = f"{world.namespace}.clicks"
    gone = world.m.spark.sql(
        f"SELECT _kafka_partition AS p, _kafka_offset AS o FROM {table} ORDER BY n LIMIT 2"
    ).collect()
    doubled = world.m.spark.sql(f"SELECT * FROM {table} ORDER BY n DESC LIMIT 1")
    world.m.spark.sql(f"DELETE FROM {table} WHERE n < 2")
    doubled.writeTo(table).append()
    text = run_cli(world.m.config_path, "reconcile", "--settle", "0")
    assert text.exit_code == 1 and f"stream {table}: drift" in text.output, text.output
    drift = run_cli(world.m.config_path, "reconcile", "--settle", "0", "--output", "json")
    assert drift.exit_code == 1, drift.output
    (clicks,) = [s for s in json.loads(drift.stdout)["streams"] if s["table"] == table]
    missing = {(p["partition"], o) for p in clicks["partitions"] for o in p["missing_offsets"]}
    assert missing == {(r.p, r.o) for r in gone}, clicks
    twice = [o for p in clicks["partitions"] for o in p["duplicated_offsets"]]
    assert len(twice) == 1, clicks


def test_an_avro_stream_and_a_new_schema_version(world: World) -> None:
    v1 = {**READING, "name": f"Reading_{world.m.name}"}
    first = [{"meter": f"m{i}", "kwh": i / 8, "at": 1_764_000_000_000 + i} for i in range(50)]
    values = [avro_value(world.reading_id, v1, e) for e in first]
    world.produce(world.readings, [*values, b"\x00\x00\x00\x00\x00 not framed by the registry"])
    world.m.mirror()
    rows = world.rows("readings", "meter, kwh, at")
    assert sorted((r.meter, r.kwh, r.at) for r in rows) == sorted(
        (e["meter"], e["kwh"], e["at"]) for e in first
    )
    v2 = {**READING_V2, "name": f"Reading_{world.m.name}"}
    v2_id = register_schema(f"{world.readings}-value", v2)
    second = [{**e, "meter": f"n{i}", "phase": i % 3} for i, e in enumerate(first[:20])]
    world.produce(world.readings, [avro_value(v2_id, v2, e) for e in second])
    world.m.mirror()
    rows = world.rows("readings", "meter, phase")
    assert sorted((r.meter, r.phase) for r in rows if r.meter.startswith("n")) == sorted(
        (e["meter"], e["phase"]) for e in second
    )
    assert all(r.phase is None for r in rows if r.meter.startswith("m"))
    dead = f"{world.namespace}__cdcmirror.dead_letter"
    reasons = world.m.spark.sql(
        f"SELECT error FROM {dead} WHERE table_name = '{world.namespace}.readings'"
    ).collect()
    assert len(reasons) == 1 and "schema id 0" in reasons[0].error, reasons
