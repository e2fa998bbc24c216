"""Benchmark: the applier on one PostgreSQL table, N events per micro-batch (default 100k).

Creates a table of N rows (10 columns of mixed types), bootstraps it (the connector snapshots
the N rows), runs `cdcmirror mirror --available-now` with max_events_per_batch = 2N (room for the
transaction markers, which take offsets: the N events in one batch), then
updates every row and mirrors again: the first batch is N inserts into an empty table, the
second N updates MERGEd into a table of N rows. Prints events/s of each batch and the time
of each phase of the applier (decode + dedupe + classify, MERGE). With several formats
(``json``, ``json-schemaless``, ``avro``) it runs the same for each and prints the events/s
of each relative to the first, measured in the same run. Needs the provisioned PostgreSQL
and the stack (`make provision stack-up`).

With ``--cluster`` the job runs on the stack's cluster profile (`cdcmirror stack up
--cluster`): Spark's standalone master and its two workers, tables in the REST catalog on
the S3 store, the checkpoint on s3a://; run it beside a run without it to compare the two
(one Spark session per process, so one mode per run).

With ``--tables=K`` the N rows are K tables' (``items0`` …, N/K rows each, one topic each)
and each batch holds all K tables' events: a job's batch of several busy tables.

    .venv/bin/python benchmarks/mirror_batch.py [N] [FORMAT,...] [--cluster] [--tables=K]
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from cdcmirror.commands.bootstrap import bootstrap
from cdcmirror.commands.mirror import mirror
from cdcmirror.config import load_config
from support import services

COLUMNS = (
    "id bigint PRIMARY KEY, a integer, b numeric(12,2), c text, d varchar(40), e timestamptz, "
    "f timestamp, g date, h boolean, k double precision"
)
FILL = (
    "SELECT i, i % 1000, i / 7.0, md5(i::text), 'v' || i, now(), now()::timestamp, "
    "current_date, i % 2 = 0, i * 1.5 FROM generate_series(1, {n}) i"
)


def fill_between(start: int, end: int) -> str:
    """The SELECT that makes the source rows of keys ``start``..``end`` (``FILL``'s rows).

    >>> "generate_series(5, 9)" in fill_between(5, 9)
    True
    """
    return FILL.format(n=end).replace("generate_series(1,", f"generate_series({start},")


class BatchLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def seconds(self) -> float:
        """The whole batches' seconds (Avro decoding happens before the table work)."""
        return sum(done[1] for done in map(batch_done, self.lines) if done is not None)


def batch_done(line: str) -> tuple[int, float] | None:
    """(batch id, seconds) of the job's "batch N done in S s" line; None for other lines."""
    if " done in " not in line or "batch " not in line:
        return None
    head, tail = line.split(" done in ", 1)
    return int(head.rsplit("batch ", 1)[1].split()[0]), float(tail.split("s", 1)[0])


def create_source(prefix: str, n: int, names: tuple[str, ...] = ("items",)) -> str:
    """A new PostgreSQL schema holding ``names`` of N rows each (``items``), published for
    Debezium."""
    schema = services.unique(prefix)
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        for name in names:
            conn.execute(f"CREATE TABLE {schema}.{name} ({COLUMNS})")
            conn.execute(f"INSERT INTO {schema}.{name} {FILL.format(n=n)}")
        services.publish_schema(conn, schema)
    return schema


def wait_for_events(topic: str, count: int, timeout: float = 300) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": services.KAFKA, "group.id": services.unique("b")})
    deadline = time.monotonic() + timeout
    last = -1
    try:
        while time.monotonic() < deadline:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)
            except Exception:  # the topic does not exist yet
                low, high = 0, 0
            if high - low >= count:
                if high == last:  # quiet for a poll: Debezium's last transaction is in
                    return
                last = high
            time.sleep(3)
    finally:
        consumer.close()
    raise SystemExit(f"{topic}: fewer than {count} events after {timeout:.0f}s")


CLUSTER = "--cluster" in sys.argv
TABLES = next((int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--tables=")), 0)
NAMES = tuple(f"items{i}" for i in range(TABLES)) if TABLES else ("items",)


def cluster_env(name: str) -> dict[str, str]:
    """The cluster profile's settings (as in integration_tests/test_spark_cluster.py)."""
    from cdcmirror.stack import cluster, s3

    catalog = {"type": "rest", "uri": cluster.REST_URL, **s3.catalog_properties()}
    return {
        "CDCMIRROR_SPARK__MASTER": cluster.MASTER_URL,
        **{f"CDCMIRROR_ICEBERG__CATALOG__{k.upper()}": v for k, v in catalog.items()},
        "CDCMIRROR_MIRROR__CHECKPOINT_LOCATION": f"s3a://{s3.BUCKET}/checkpoints/{name}",
    }


def main(n: int, formats: list[str]) -> None:
    # one work directory (one embedded catalog) for the whole process: its Spark session
    # keeps the catalog it opened first
    with tempfile.TemporaryDirectory() as work:
        rates = {fmt: run(n, fmt, Path(work)) for fmt in formats}
    first = formats[0]
    for fmt, (inserts, updates) in rates.items():
        print(
            f"{fmt}: {inserts:,.0f} inserts/s ({inserts / rates[first][0]:.2f}x {first}), "
            f"{updates:,.0f} updates/s ({updates / rates[first][1]:.2f}x {first})"
        )


def run(n: int, kafka_format: str, work: Path) -> tuple[float, float]:
    """(events/s of the insert batch, of the update batch), from the applier's log lines."""
    schema = create_source("benchm", n // len(NAMES), NAMES)
    env = {
        **services.schema_source_env(schema),
        # room for the transaction markers (they take offsets): the N events in one batch
        "CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH": str(2 * n),
        "CDCMIRROR_KAFKA__FORMAT": kafka_format,
        "CDCMIRROR_MIRROR__CHECKPOINT_LOCATION": f".cdcmirror/checkpoints/{schema}",
        # this benchmark measures the mirror applying Debezium's snapshot events
        "CDCMIRROR_BOOTSTRAP__INITIAL_LOAD": "debezium",
        **(cluster_env(schema) if CLUSTER else {}),
    }
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    handler = BatchLines()
    logging.getLogger("cdcmirror.mirror").addHandler(handler)
    logging.getLogger("cdcmirror.mirror").setLevel(logging.INFO)
    topics = [f"{schema}.{schema}.{name}" for name in NAMES]
    per = n // len(NAMES)
    rates: list[float] = []
    try:
        config = load_config(environ=env, cwd=work)
        bootstrap(config)
        for topic in topics:
            wait_for_events(topic, per)
        for label in ("inserts into an empty table", "updates of every row"):
            handler.lines.clear()
            start = time.monotonic()
            mirror(config, available_now=True)
            total = time.monotonic() - start
            for line in handler.lines:
                print(f"{kafka_format} {label}: {line}")
            seconds = handler.seconds()
            rates.append(n / seconds)
            print(
                f"{kafka_format} {label}: {n} events, applier {seconds:.1f}s = "
                f"{n / seconds:,.0f} events/s; mirror run {total:.1f}s"
            )
            if label.startswith("inserts"):
                with services.pg_connect() as conn:
                    for name in NAMES:
                        conn.execute(f"UPDATE {schema}.{name} SET a = a + 1, c = md5(c)")
                for topic in topics:
                    wait_for_events(topic, 2 * per + 1)  # the updates (+ the snapshot)
    finally:
        logging.getLogger("cdcmirror.mirror").removeHandler(handler)
        services.drop_published_schema(schema, f"cdcmirror-{schema}")
    return rates[0], rates[1]


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    with services.forgetting_made():
        main(
            int(args[0]) if args else 100_000,
            args[1].split(",") if len(args) > 1 else ["json"],
        )
