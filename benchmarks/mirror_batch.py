"""Benchmark: the applier on one PostgreSQL table, N events per micro-batch (default 100k).

Creates a table of N rows (10 columns of mixed types), bootstraps it (the connector snapshots
the N rows), runs `cdcmirror mirror --available-now` with max_events_per_batch = N, then
updates every row and mirrors again: the first batch is N inserts into an empty table, the
second N updates MERGEd into a table of N rows. Prints events/s of each batch and the time
of each phase of the applier (decode + dedupe + classify, MERGE). Needs the provisioned
PostgreSQL and the stack (`make provision stack-up`).

    .venv/bin/python benchmarks/mirror_batch.py [N]
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from cdcmirror.bootstrap.run import bootstrap
from cdcmirror.config import load_config
from cdcmirror.mirror.run import mirror
from integration_tests import services

COLUMNS = (
    "id bigint PRIMARY KEY, a integer, b numeric(12,2), c text, d varchar(40), e timestamptz, "
    "f timestamp, g date, h boolean, k double precision"
)
FILL = (
    "SELECT i, i % 1000, i / 7.0, md5(i::text), 'v' || i, now(), now()::timestamp, "
    "current_date, i % 2 = 0, i * 1.5 FROM generate_series(1, {n}) i"
)


class BatchLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def wait_for_events(topic: str, count: int, timeout: float = 300) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": services.KAFKA, "group.id": services.unique("b")})
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)
            except Exception:  # the topic does not exist yet
                low, high = 0, 0
            if high - low >= count:
                return
            time.sleep(2)
    finally:
        consumer.close()
    raise SystemExit(f"{topic}: fewer than {count} events after {timeout:.0f}s")


def main(n: int) -> None:
    schema = services.unique("benchm")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.items ({COLUMNS})")
        conn.execute(f"INSERT INTO {schema}.items {FILL.format(n=n)}")
        services.publish_schema(conn, schema)
    env = {
        **services.schema_source_env(schema),
        "CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH": str(n),
    }
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    handler = BatchLines()
    logging.getLogger("cdcmirror.mirror").addHandler(handler)
    logging.getLogger("cdcmirror.mirror").setLevel(logging.INFO)
    topic = f"{schema}.{schema}.items"
    try:
        with tempfile.TemporaryDirectory() as work:
            config = load_config(environ=env, cwd=Path(work))
            bootstrap(config)
            wait_for_events(topic, n)
            for label in ("inserts into an empty table", "updates of every row"):
                handler.lines.clear()
                start = time.monotonic()
                mirror(config, available_now=True)
                total = time.monotonic() - start
                for line in handler.lines:
                    print(f"{label}: {line}")
                print(f"{label}: {n} events, mirror run {total:.1f}s (JVM warm after the first)")
                if label.startswith("inserts"):
                    with services.pg_connect() as conn:
                        conn.execute(f"UPDATE {schema}.items SET a = a + 1, c = md5(c)")
                    wait_for_events(topic, 2 * n + 1)  # the updates (+ the snapshot)
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
