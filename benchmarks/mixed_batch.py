"""Benchmark: the applier's throughput beside its bounds, measured in one run (issue 17).

One PostgreSQL table of N rows (10 columns of mixed types), bootstrapped, mirrored in three
rounds, each one batch (`cdcmirror mirror --available-now`, max_events_per_batch = 3N):

- ``inserts``: Debezium's snapshot of the N rows into the empty table;
- ``updates``: every row updated once;
- ``mixed``: about N events, 60 % updates (a fifth of the keys updated twice), 20 % inserts
  of new keys, 20 % deletes (a tenth of the new keys deleted in the same batch);
- ``warm inserts``: N inserts of new keys into the table, a batch in a JVM that has run
  the others (the ``inserts`` batch is the job's first: its decode and writes run in a JVM
  that has compiled nothing yet, while the bounds are measured after it).

Before each round the mirrored table is copied (CREATE TABLE AS SELECT, not timed). After
it, the same round's deduplicated effect (the rows as they stand afterwards, and the keys
it deleted) is written again to the copies, in the same Spark session:

- ``plain MERGE``: ``MERGE … WHEN MATCHED AND deleted THEN DELETE WHEN MATCHED THEN UPDATE
  WHEN NOT MATCHED THEN INSERT``, R times on fresh copies, the median;
- ``plain append``: ``writeTo().append()`` of the rows (the bound of an insert batch);
- ``pyiceberg``: ``Table.upsert`` of the rows and ``Table.delete`` of the keys (pure Python);
- ``read + parse``: plain Spark reading the round's Kafka records (its offset range, split
  as the mirror's reads are) and parsing them with one ``from_json`` of the envelope, the
  columns written to Spark's ``noop`` sink, twice, the faster: what reading the events
  costs before anything is written (the appends and MERGEs above start from rows in memory).

The rounds' runs share one checkpoint, which keeps the row schemas the job applied
(``checkpoint_store.remembered_schemas``): the updates and mixed batches are read from
Kafka once by their decode (``spark/cdc/plan.py``); the inserts batch, the job's first,
is read once in the row schemas of its first records (``spark/cdc/records.guess``).
With ``--cold`` that file is removed before each round, so each batch does that.

Prints the batch's seconds and phases (from the applier's log), its Spark jobs and the
driver JVM's peak heap, the bounds, and the ratios bound / batch. After each round the
mirrored table is compared with the source row by row (a mismatch stops the benchmark).
Needs the provisioned PostgreSQL and the stack (`make provision stack-up`).
``--format=F`` (``json``, the default; ``json-schemaless``; ``avro``) is the Kafka format of
the events, and ``read + parse`` parses that format (Spark's ``from_avro`` of each record's
body after its 5-byte frame, with its schema from the registry, for Avro). With
``--decode-steps`` each round also times the applier's decode of its records step by step
(``benchmarks/decode_steps.py``). With ``--warmup=K`` the job runs K batches of N updates
(every row updated once, not measured) after the ``inserts`` round, so that the rounds after
it run in a JVM that has compiled the decode and the MERGE, as a job that has been running
for a while has: without them the ``updates`` round is the JVM's second batch.
``--no-consistent-tag``: the job keeps no consistent tag (``mirror.consistent_tag``, on by
default), to compare a batch's cost with and without it; ``--history``: the table keeps a
history table (``mirror.history``), the same.
``--driver-memory=M`` (``12g``): the JVM's heap, which the session gives 4g, 8g with
``--decode-steps`` (whose last steps hold a round's records in memory: 4g ran out in the
warm inserts round). A batch of 1M updates ran out of 4g: the job shares the JVM with the
bounds' cached rows. N defaults to 100000, R to 3. ``MIXED_BATCH_EVENT_LOG=DIR``: Spark
writes its event log (every query, job and stage with their times) into DIR.

    .venv/bin/python benchmarks/mixed_batch.py [N] [R] [--cold] [--format=F] [--decode-steps]
        [--warmup=K] [--driver-memory=M]
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bounds import effect, plain_merge, pyiceberg_upsert, read_and_parse
from benchmarks.copies import copy_like
from benchmarks.decode_steps import decode_steps
from benchmarks.event_timeline import event_log_conf
from benchmarks.mirror_batch import BatchLines, create_source, fill_between, wait_for_events
from cdcmirror.checkpoint_store import SCHEMAS_FILE, checkpoint_files
from cdcmirror.commands.bootstrap import bootstrap
from cdcmirror.commands.mirror import mirror
from cdcmirror.config import Config, load_config
from cdcmirror.spark.session import build_spark_session
from support import services
from support.bootstrap_env import write_config

NAMES = ("id", "a", "b", "c", "d", "e", "f", "g", "h", "k")


def mixed_statements(schema: str, n: int) -> list[str]:
    """The mixed round's source statements, one transaction each (about N events)."""
    t = f"{schema}.items"
    new = fill_between(n + 1, n + n // 5)
    return [
        f"UPDATE {t} SET a = a + 1, c = md5(c) WHERE id % 10 < 4",  # 0.4 N
        f"UPDATE {t} SET b = b + 1, d = d || 'x' WHERE id % 10 < 2",  # 0.2 N, again
        f"INSERT INTO {t} {new}",  # 0.2 N new keys
        f"DELETE FROM {t} WHERE id <= {n} AND id % 10 >= 8",  # 0.2 N
        f"DELETE FROM {t} WHERE id > {n} AND id % 10 = 9",  # 0.02 N inserted, then deleted
    ]


FORMAT = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--format=")), "json")
WARMUP = int(next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--warmup=")), "0"))
# the JVM's heap (the session's 4g unless given): a batch of 1M events of updates needs more
DRIVER_MEMORY = next(
    (a.split("=", 1)[1] for a in sys.argv if a.startswith("--driver-memory=")),
    "8g" if "--decode-steps" in sys.argv else "",  # its steps hold a round's records too
)


def main(n: int, runs: int) -> None:
    schema = create_source("benchx", n)
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    print(f"format {FORMAT}", flush=True)
    env = {
        **services.schema_source_env(schema),
        "CDCMIRROR_KAFKA__FORMAT": FORMAT,
        "CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH": str(3 * n),  # room for transaction markers
        "CDCMIRROR_MIRROR__CHECKPOINT_LOCATION": f".cdcmirror/checkpoints/{schema}",
        "CDCMIRROR_BOOTSTRAP__INITIAL_LOAD": "debezium",  # the snapshot goes through Kafka
    }
    if DRIVER_MEMORY:
        env["CDCMIRROR_SPARK__CONF__SPARK.DRIVER.MEMORY"] = DRIVER_MEMORY
    if "--no-consistent-tag" in sys.argv:
        env["CDCMIRROR_MIRROR__CONSISTENT_TAG"] = ""
        print("without the consistent tag", flush=True)
    if "--history" in sys.argv:
        env["CDCMIRROR_MIRROR__HISTORY"] = f"{schema}.items"
        print("with history (items__history)", flush=True)
    handler = BatchLines()
    log = logging.getLogger("cdcmirror.mirror")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    results: list[dict[str, Any]] = []
    topic = f"{schema}.{schema}.items"
    work = tempfile.TemporaryDirectory()
    try:
        event_log(Path(work.name))
        config = load_config(environ=env, cwd=Path(work.name))
        bootstrap(config)
        wait_for_events(topic, n)
        expected, start = n, 0
        for label in ("inserts", "updates", "mixed", "warm inserts"):
            if label == "updates":
                with services.pg_connect() as conn:
                    conn.execute(f"UPDATE {schema}.items SET a = a + 1, c = md5(c)")
                expected += n
            elif label == "mixed":
                with services.pg_connect() as conn:
                    for statement in mixed_statements(schema, n):
                        expected += conn.execute(statement).rowcount
            elif label == "warm inserts":
                fill = fill_between(2 * n + 1, 3 * n)
                with services.pg_connect() as conn:
                    expected += conn.execute(f"INSERT INTO {schema}.items {fill}").rowcount
            wait_for_events(topic, expected)
            result = round_of(label, config, schema, handler, runs)
            end = end_offset(topic)
            result["read_parse"] = read_and_parse(config, FORMAT, topic, start, end)
            if "--decode-steps" in sys.argv:
                result["decode_steps"] = decode_steps(config, FORMAT, topic, start, end)
            start = end
            print(json.dumps(result), flush=True)
            results.append(result)
            if label == "inserts" and WARMUP:
                expected = warm_up(config, schema, topic, expected, n)
                start = end_offset(topic)
    finally:
        log.removeHandler(handler)
        services.drop_published_schema(schema, f"cdcmirror-{schema}")
        work.cleanup()
    report(results)


def event_log(work: Path) -> None:
    """With ``MIXED_BATCH_EVENT_LOG=DIR``, the job's Spark writes its event log into DIR
    (a ``cdcmirror.toml`` in the benchmark's working directory: Spark's setting names are
    case-sensitive, which the ``CDCMIRROR_`` variables are not)."""
    where = os.environ.get("MIXED_BATCH_EVENT_LOG")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        write_config(work, spark={"conf": event_log_conf(Path(where))})
        print(f"Spark event log in {where}", flush=True)


def warm_up(config: Config, schema: str, topic: str, expected: int, n: int) -> int:
    """``WARMUP`` batches of N updates, not measured; the topic's expected events after them."""
    for i in range(WARMUP):
        with services.pg_connect() as conn:
            expected += conn.execute(f"UPDATE {schema}.items SET k = k + 1").rowcount
        wait_for_events(topic, expected)
        started = time.monotonic()
        mirror(config, available_now=True)
        print(f"warm-up batch {i + 1}: {time.monotonic() - started:.2f} s", flush=True)
    return expected


def round_of(
    label: str, config: Config, schema: str, lines: BatchLines, runs: int
) -> dict[str, Any]:
    """One round: copies of the table as it stands, the mirror's batch, the row-by-row
    check, then the bounds on the copies."""
    spark: Any = build_spark_session(config)
    target = f"{schema}.items"
    copies = [f"{target}_plain{i}" for i in range(runs)] + [f"{target}_append", f"{target}_py"]
    for copy in copies:
        copy_like(spark, target, copy)
    if "--cold" in sys.argv:  # the job forgets the row schemas it applied
        (Path(checkpoint_files(config).location) / SCHEMAS_FILE).unlink(missing_ok=True)
    lines.lines.clear()
    jobs_before = last_job(spark)
    reset_peaks(spark)
    started = time.monotonic()
    mirror(config, available_now=True)
    run_seconds = time.monotonic() - started
    result: dict[str, Any] = {
        "round": label,
        "run_seconds": run_seconds,
        "batch_seconds": lines.seconds(),
        "jobs": last_job(spark) - jobs_before,
        "peak_heap_mib": heap_peak(spark) / 2**20,
        **batch_figures(lines.lines),
    }
    check_equal(spark, schema)
    rows, deleted = effect(spark, target, f"{target}_py")
    result["rows"], result["deleted"] = rows.count(), deleted.count()
    result["plain_merge"] = statistics.median(
        plain_merge(spark, copy, rows, deleted) for copy in copies[:runs]
    )
    started = time.monotonic()
    rows.drop("_del").writeTo(f"{target}_append").append()
    result["plain_append"] = time.monotonic() - started
    result["pyiceberg"] = pyiceberg_upsert(config, f"{target}_py", rows, deleted)
    for copy in copies:
        spark.sql(f"DROP TABLE IF EXISTS {copy}")
    return result


def end_offset(topic: str) -> int:
    """The end offset of ``topic``'s partition 0 (the benchmark's topics have one)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": services.KAFKA, "group.id": services.unique("b")})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def batch_figures(lines: list[str]) -> dict[str, Any]:
    """Events and phase seconds of the round's table batches (the applier's log lines)."""
    tables = [json.loads(x.split(" ", 2)[2]) for x in lines if x.startswith("mirror batch {")]
    phases: dict[str, float] = {}
    for t in tables:
        for phase, seconds in t.get("phase_seconds", {}).items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    events = sum(t.get("events", 0) for t in tables)
    changed = sum(t.get("inserts", 0) + t.get("updates", 0) + t.get("deletes", 0) for t in tables)
    done = [x for x in lines if " done in " in x]
    for x in done:
        if "read and summary " in x:
            read = float(x.split("read and summary ", 1)[1].split("s", 1)[0])
            phases["read and summary"] = phases.get("read and summary", 0.0) + read
    batches = len(done)
    jobs = sum(t.get("spark_jobs", 0) for t in tables)
    return {
        "batches": batches,
        "events": events,
        "changed": changed,
        "phases": phases,
        "table_jobs": jobs,
    }


def last_job(spark: Any) -> int:
    """The newest Spark job's id in the driver's status store (-1: none yet)."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    return max([-1, *(int(jobs.apply(i).jobId()) for i in range(min(jobs.size(), 5)))])


def reset_peaks(spark: Any) -> None:
    for pool in spark._jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
        pool.resetPeakUsage()


def heap_peak(spark: Any) -> int:
    """Bytes: the sum of the heap pools' peaks since ``reset_peaks`` (an upper bound)."""
    pools = spark._jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    return sum(p.getPeakUsage().getUsed() for p in pools if p.getType().name() == "HEAP")


def check_equal(spark: Any, schema: str) -> None:
    """The mirrored table equals the source, row by row (id, a, b, c, d)."""
    with services.pg_connect() as conn:
        source = {
            tuple(str(v) for v in row)
            for row in conn.execute(f"SELECT id, a, b, c, d FROM {schema}.items").fetchall()
        }
    mirrored = {
        tuple(str(v) for v in row)
        for row in spark.sql(f"SELECT id, a, b, c, d FROM {schema}.items").collect()
    }
    if source != mirrored:
        missing, extra = len(source - mirrored), len(mirrored - source)
        raise SystemExit(f"{schema}.items: {missing} source rows not mirrored, {extra} extra")
    print(f"{schema}.items equals the source: {len(source):,} rows", flush=True)


def report(results: list[dict[str, Any]]) -> None:
    head = (
        "round", "events", "rows changed", "batch s", "events/s", "Spark jobs",
        "of them the table's", "peak heap MiB", "plain MERGE s", "plain append s",
        "pyiceberg s", "read + parse s", "MERGE / batch", "append / batch",
        "read + parse / batch", "(read + parse + MERGE) / batch", "batch speed / pyiceberg",
    )  # fmt: skip
    print("\n| " + " | ".join(head) + " |\n" + "| --- " * len(head) + "|")
    for r in results:
        batch = r["batch_seconds"]
        cells = (
            r["round"], f"{r['events']:,}", f"{r['changed']:,}", f"{batch:.2f}",
            f"{r['events'] / batch:,.0f}",
            r["jobs"], r["table_jobs"], f"{r['peak_heap_mib']:,.0f}", f"{r['plain_merge']:.2f}",
            f"{r['plain_append']:.2f}", f"{r['pyiceberg']:.2f}", f"{r['read_parse']:.2f}",
            f"{r['plain_merge'] / batch:.2f}x", f"{r['plain_append'] / batch:.2f}x",
            f"{r['read_parse'] / batch:.2f}x",
            f"{(r['read_parse'] + r['plain_merge']) / batch:.2f}x",
            f"{r['pyiceberg'] / batch:.1f}x",
        )  # fmt: skip
        print("| " + " | ".join(str(c) for c in cells) + " |")
    for r in results:
        phases = ", ".join(f"{k} {v:.2f}" for k, v in r["phases"].items())
        print(f"{r['round']}: {r['batches']} batch(es); phases s: {phases}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    with services.forgetting_made():
        main(int(args[0]) if args else 100_000, int(args[1]) if len(args) > 1 else 3)
