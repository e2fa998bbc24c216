"""Record the golden Debezium events under ``support/fixtures/debezium/``:

    .venv/bin/python -m support.record_golden     # needs provision + stack-up

For each dialect and format, a table is bootstrapped through Debezium's snapshot, then
changed by one statement at a time: an insert, an update that leaves an out-of-line TOAST
value unchanged (PostgreSQL), a delete, a key change, a truncate. The file holds the
table's mirror spec, the topic's records exactly as Kafka holds them (key, value, headers,
partition, offset; Avro: the writer schemas by id), and what the source held after each
statement: ``test_golden_events.py`` decodes the records and compares with it.
"""

from __future__ import annotations

import base64
import json
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from cdcmirror.catalog import load_catalog
from cdcmirror.clients.registry import SchemaRegistry
from cdcmirror.commands.job_tables import load_tables
from cdcmirror.config import load_config
from support import services
from support.mirror_fixture import bootstrap, make_config

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "debezium"
COLUMNS = ("id", "name", "amount", "seen", "body")
BIG = "".join(f"{i:04d}-golden;" for i in range(300))  # 3.3 KB: stored out of line
CASES = [("postgresql", "json"), ("postgresql", "json-schemaless"), ("postgresql", "avro")]
CASES += [("mysql", "json"), ("mysql", "avro")]


def _create(dialect: str, name: str) -> Any:
    """The source table with two rows (they arrive as snapshot reads); a connection."""
    if dialect == "postgresql":
        conn: Any = services.pg_connect()
        conn.autocommit = True
        conn.execute(f"CREATE SCHEMA {name}")
        conn.execute(
            f"CREATE TABLE {name}.golden (id int PRIMARY KEY, name varchar(40), "
            "amount numeric(12,3), seen timestamp, body text)"
        )
        conn.execute(f"ALTER TABLE {name}.golden ALTER COLUMN body SET STORAGE EXTERNAL")
        services.publish_schema(conn, name)
    else:
        admin = services.maria_connect()
        with admin.cursor() as cur:
            services.maria_database(cur, name)
            cur.execute(
                f"CREATE TABLE {name}.golden (id int PRIMARY KEY, name varchar(40), "
                "amount decimal(12,3), seen datetime(6), body text) CHARACTER SET utf8mb4"
            )
        conn = services.maria_connect(name)
    _run(
        conn,
        f"INSERT INTO {name}.golden VALUES (1, 'one', 1.5, '2024-01-02 03:04:05.123456', "
        f"'{BIG}'), (2, 'two', NULL, NULL, 'short')",
    )
    return conn


def _run(conn: Any, sql: str) -> None:
    """One statement, committed (DB-API: psycopg and PyMySQL connections alike)."""
    with conn.cursor() as cur:
        cur.execute(sql)
    conn.commit()


def _row(conn: Any, name: str, key: int) -> dict[str, str | None] | None:
    sql = f"SELECT {', '.join(COLUMNS)} FROM {name}.golden WHERE id = {key}"
    with conn.cursor() as cur:
        cur.execute(sql)
        found = cur.fetchone()
    conn.commit()
    if found is None:
        return None
    return {c: None if v is None else str(v) for c, v in zip(COLUMNS, found, strict=True)}


def _statements(dialect: str, conn: Any, name: str) -> list[dict[str, Any]]:
    """Change the table one statement at a time; what each event must decode to."""
    t = f"{name}.golden"
    expected: list[dict[str, Any]] = []
    _run(conn, f"INSERT INTO {t} VALUES (3, 'three', -7.125, '1999-12-31 23:59:59', 'x')")
    expected.append({"op": "c", "key": 3, "row": _row(conn, name, 3)})
    _run(conn, f"UPDATE {t} SET name = 'uno' WHERE id = 1")  # body: TOAST, unchanged
    toast = ["body"] if dialect == "postgresql" else []
    expected.append({"op": "u", "key": 1, "row": _row(conn, name, 1), "unchanged": toast})
    _run(conn, f"DELETE FROM {t} WHERE id = 2")
    expected.append({"op": "d", "key": 2, "row": None})
    _run(conn, f"UPDATE {t} SET id = 30 WHERE id = 3")
    expected.append({"op": "d", "key": 3, "row": None})
    expected.append({"op": "c", "key": 30, "row": _row(conn, name, 30), "old_key": 3})
    _run(conn, f"TRUNCATE TABLE {t}")
    expected.append({"op": "t", "key": None, "row": None})
    return expected


def _records(topic: str, at_least: int, timeout: float = 120.0) -> list[dict[str, Any]]:
    """Every committed record of the topic (tombstones too): at least ``at_least``, then
    until five polls in a row find nothing more."""

    def b64(raw: bytes | None) -> str | None:
        return None if raw is None else base64.b64encode(raw).decode()

    consumer = Consumer(
        {
            "bootstrap.servers": services.KAFKA,
            "group.id": services.unique("golden"),
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    out: list[dict[str, Any]] = []
    deadline, idle = time.monotonic() + timeout, 0
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        while (len(out) < at_least or idle < 5) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                idle += 1
                continue
            idle = 0
            out.append(
                {
                    "topic": topic,
                    "partition": msg.partition(),
                    "offset": msg.offset(),
                    "timestamp_ms": msg.timestamp()[1],
                    "key": b64(msg.key()),
                    "value": b64(msg.value()),
                    "headers": _headers(msg.headers()),
                }
            )
    finally:
        consumer.close()
    if len(out) < at_least:
        raise AssertionError(f"{topic}: {len(out)} of {at_least} records in {timeout:.0f} s")
    return out


def _headers(found: Any) -> list[list[str | None]]:
    """Kafka headers as [name, base64 value] pairs."""
    out: list[list[str | None]] = []
    for name, value in found or []:
        out.append([name, None if value is None else base64.b64encode(value).decode()])
    return out


def record(dialect: str, kafka_format: str, work: Path) -> dict[str, Any]:
    name = services.unique("golden")
    conn = _create(dialect, name)
    snapshot = {str(k): _row(conn, name, k) for k in (1, 2)}
    config_path = make_config(
        work,
        name,
        dialect,
        f"{name}.*",
        services.TEST_DATABASE if dialect == "postgresql" else name,
        kafka_format=kafka_format,
        bootstrap={"initial_load": "debezium"},
    )
    bootstrap(config_path)
    config = load_config(config_path, environ={})
    table = load_tables(config, load_catalog(config))[0]
    expected = _statements(dialect, conn, name)
    # snapshot reads, then one record per event, and a tombstone after each delete
    count = 2 + len(expected) + sum(1 for e in expected if e["op"] == "d")
    services.wait_topic_quiet(table.topic)
    records = _records(table.topic, count - 1)
    if len(records) == count - 1:  # the connector skips truncates (skipped.operations)
        expected = [e for e in expected if e["op"] != "t"]
    elif len(records) != count:
        raise AssertionError(f"{table.topic}: {len(records)} records, expected {count}")
    schemas: dict[str, str] = {}
    if kafka_format == "avro":
        ids = {
            int.from_bytes(base64.b64decode(r["value"])[1:5], "big") for r in records if r["value"]
        }
        found = SchemaRegistry(config.kafka.schema_registry_url).schemas(sorted(ids))
        schemas = {str(k): v for k, v in found.items()}
    conn.close()
    if dialect == "postgresql":
        services.drop_published_schema(name, f"cdcmirror-{name}")
    else:
        services.connect_client().delete(f"cdcmirror-{name}")
        admin = services.maria_connect()
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE {name}")
        admin.close()
    return {
        "dialect": dialect,
        "format": kafka_format,
        "table": asdict(table),
        "schemas": schemas,
        "records": records,
        "snapshot": snapshot,
        "expected": expected,
    }


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for dialect, kafka_format in CASES:
            found = record(dialect, kafka_format, Path(work))
            path = FIXTURES / f"{dialect}-{kafka_format}.json"
            path.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
            print(f"{path}: {len(found['records'])} records")


if __name__ == "__main__":
    main()
