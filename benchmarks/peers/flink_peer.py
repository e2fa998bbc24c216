"""Benchmark: cdcmirror beside the classic reference pipeline, Flink SQL into an Iceberg upsert
table, on the same Debezium topic.

One PostgreSQL table (the columns of ``benchmarks/mirror_batch.py``, ``REPLICA IDENTITY
FULL``, which Flink's ``debezium-json`` needs for its updates' before images) of ROWS rows,
read by the connector's snapshot, then CHANGES changes in transactions of 100 (60 updates, 20
inserts, 20 deletes). When the topic holds them all, each system runs alone on it from the
first offset, one after the other:

- cdcmirror: ``cdcmirror mirror --available-now`` (``max_events_per_batch = 0``: one batch);
- plain Spark (``spark_plain_job.py``, ``--no-plain`` skips it): the floor under cdcmirror's
  time, the least Spark batch job from the topic to the table, on cdcmirror's session;
- Flink (``flink_job.py``, PyFlink local MiniCluster, parallelism 2) once per checkpoint
  interval of ``--checkpoints`` (default 2 and 10 s), each into a fresh table, stopped when
  its consumer group has committed the topic's end and a checkpoint or two have passed.

Time to equality is from the process's start to the commit time of the table's first
snapshot equal to the source row by row (every snapshot is comparable by time travel; the
first equal one is found by bisection, since no change arrives after it). Then the read
cost of each table (``count(*), sum(hash(c))`` in Spark, median of 5 after one warm-up), and
a replay round (``--no-replay`` skips it): the topic's whole history is produced again after
the changes, then the snapshot's reads once more (as a connector that snapshots again sends
them); cdcmirror runs again from its checkpoint and Flink again on its consumer group (first
checkpoint interval), and each table is compared with the source (rows missing, rows extra).

Needs the provisioned PostgreSQL and the stack (`make provision stack-up`); the peer is built
by ``flink_setup.py`` (PyPI and Maven Central). Outside CI: ``make bench-peers``.

    .venv/bin/python benchmarks/peers/flink_peer.py [ROWS] [CHANGES] [--checkpoints=2,10]
        [--no-replay] [--no-plain]
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flink_setup import FlinkPeer, setup

from benchmarks.mirror_batch import create_source, fill_between
from cdcmirror.commands.bootstrap import bootstrap
from cdcmirror.config import Config, load_config
from support import services

TX_INSERTS, TX_UPDATES, TX_DELETES = 20, 60, 20
MICROS = "yyyy-MM-dd HH:mm:ss.SSSSSS"


@dataclass
class Run:
    """One system's run on the topic: where its table is and when its process started."""

    label: str
    table: str  # the table's name in the benchmark's Spark session
    started: float  # epoch seconds
    process_seconds: float = 0.0
    equal_after: float | None = None  # seconds from start to the first equal snapshot
    snapshots: int = 0
    differing: int = 0  # rows that differ in the newest snapshot, when none is equal


def main(rows: int, changes: int, checkpoints: list[int], replay: bool, plain: bool) -> None:
    peer = setup()
    work = Path(tempfile.mkdtemp(prefix="cdcmirror-peers-"))  # kept when a run fails: its logs
    schema = create_source("peer", rows)
    with services.pg_connect() as conn:  # the before images Flink's debezium-json needs
        conn.execute(f"ALTER TABLE {schema}.items REPLICA IDENTITY FULL")
    topic = f"{schema}.{schema}.items"
    env = {
        **services.schema_source_env(schema),
        "CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH": "0",
        "CDCMIRROR_MIRROR__CHECKPOINT_LOCATION": f".cdcmirror/checkpoints/{schema}",
        "CDCMIRROR_BOOTSTRAP__INITIAL_LOAD": "debezium",
    }
    config = load_config(environ=env, cwd=work)
    try:
        bootstrap(config)
        services.wait_topic_quiet(topic)
        started = time.monotonic()
        write_changes(schema, rows, changes)
        print(f"source: {rows:,} rows, {changes:,} changes in {time.monotonic() - started:.0f}s")
        end = services.wait_topic_quiet(topic, quiet=8.0, timeout=1800)
        print(f"topic {topic}: {end:,} offsets", flush=True)
        runs = [run_mirror(env, work, f"{schema}.items")]
        if plain:
            runs.append(run_plain_spark(env, work, topic, f"{schema}.items_plain"))
        for seconds in checkpoints:
            runs.append(run_flink(peer, topic, work / f"flink{seconds}", seconds))
        spark = spark_session(config, checkpoints, work)
        source = source_rows(spark, schema)
        for run in runs:
            time_to_equality(spark, run, source)
        report(runs, rows, changes)
        read_costs(spark, runs)
        if replay and checkpoints:
            replay_round(spark, peer, env, work, topic, runs, checkpoints[0], source)
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")
    shutil.rmtree(work)


def write_changes(schema: str, rows: int, changes: int) -> None:
    """Transactions of 100 changes: 20 new keys inserted, 20 oldest deleted, 60 others
    updated; the live keys stay ``rows`` many, ``[lo, hi)``."""
    rng = random.Random(72)
    lo, hi = 1, rows + 1
    with services.pg_connect() as conn:
        for _ in range(changes // (TX_INSERTS + TX_UPDATES + TX_DELETES)):
            updated = rng.sample(range(lo + TX_DELETES, hi), TX_UPDATES)
            with conn.transaction():
                new = fill_between(hi, hi + TX_INSERTS - 1)
                conn.execute(f"INSERT INTO {schema}.items {new}")
                conn.execute(
                    f"UPDATE {schema}.items SET a = a + 1, c = md5(c), e = now(), k = k + 0.5 "
                    f"WHERE id = ANY(%s)",
                    (updated,),
                )
                conn.execute(
                    f"DELETE FROM {schema}.items WHERE id >= %s AND id < %s", (lo, lo + TX_DELETES)
                )
            lo, hi = lo + TX_DELETES, hi + TX_INSERTS


def run_mirror(env: dict[str, str], work: Path, table: str, label: str = "cdcmirror") -> Run:
    cli = Path(sys.executable).parent / "cdcmirror"
    run, proc = timed(
        label, table, [str(cli), "--log-level", "info", "mirror", "--available-now"], env, work
    )
    batches = [
        line
        for line in proc.stderr.splitlines()
        if " done in " in line or '"phase_seconds"' in line or "consistent tag" in line
    ]
    print(f"{label}: process {run.process_seconds:.1f}s", *batches, sep="\n  ", flush=True)
    return run


def run_plain_spark(env: dict[str, str], work: Path, topic: str, table: str) -> Run:
    """The floor under cdcmirror's time: plain Spark's least work from the topic to the table
    (``spark_plain_job.py``), a fresh process on cdcmirror's session; then the same job again
    in its warm JVM (after the table's commit: the time to equality does not include it)."""
    job = str(Path(__file__).with_name("spark_plain_job.py"))
    command = [sys.executable, job, topic, table, "--again"]
    run, proc = timed("plain Spark, one batch job", table, command, env, work)
    print(f"{run.label}: process {run.process_seconds:.1f}s", proc.stdout.strip(), sep="\n  ")
    return run


def timed(
    label: str, table: str, command: list[str], env: dict[str, str], work: Path
) -> tuple[Run, subprocess.CompletedProcess[str]]:
    """``command`` run to its end in ``work`` with ``env`` added, its output kept beside the
    run (``<label>.log``); a failure ends the benchmark."""
    run = Run(label, table, time.time())
    proc = subprocess.run(
        command, cwd=work, env={**os.environ, **env}, capture_output=True, text=True, check=False
    )
    run.process_seconds = time.time() - run.started
    (work / f"{label}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"{label} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return run, proc


def run_flink(
    peer: FlinkPeer, topic: str, warehouse: Path, seconds: int, group: str | None = None
) -> Run:
    """Start the Flink job; stop it once its group has committed the topic's end and two more
    checkpoints have passed (the sink commits on the checkpoint the offsets commit on)."""
    group = group or f"flink-{warehouse.name}-{services.unique('g')}"
    warehouse.mkdir(exist_ok=True)
    end = end_offsets(topic, data=True)
    job = Path(__file__).with_name("flink_job.py")
    run = Run(f"Flink, {seconds} s checkpoints", f"peer{seconds}.db.items", time.time())
    with (warehouse / "job.log").open("a") as log:
        proc = subprocess.Popen(
            [
                str(peer.python),
                str(job),
                f"--topic={topic}",
                f"--group={group}",
                f"--warehouse={warehouse}",
                f"--checkpoint-ms={seconds * 1000}",
                "--jars=" + ";".join(str(j) for j in peer.jars),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                "HADOOP_CLASSPATH": ":".join(str(j) for j in peer.hadoop),
                "FLINK_LOG_DIR": str(warehouse / "log"),
            },
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 1800
        while committed(topic, group, end) < sum(end.values()):
            if proc.poll() is not None:
                raise SystemExit(f"the Flink job ended ({proc.returncode}); logs in {warehouse}")
            if time.monotonic() > deadline:
                raise SystemExit(f"the Flink job did not reach the topic's end; see {warehouse}")
            time.sleep(0.5)
        run.process_seconds = time.time() - run.started
        time.sleep(2 * seconds + 2)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    (warehouse / "group").write_text(group)
    print(f"{run.label}: offsets committed after {run.process_seconds:.1f}s", flush=True)
    return run


def end_offsets(topic: str, data: bool = False) -> dict[int, int]:
    """Each partition's end; with ``data``, the end after its last record with a value (a
    consumer that skips tombstones commits no further than that)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": services.KAFKA, "group.id": services.unique("e")})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
        if not data:
            return ends
        for partition, end in ends.items():
            last = 0
            for message in read(consumer, topic, partition, max(0, end - 20), end):
                if message.value() is not None:
                    last = message.offset() + 1
            ends[partition] = last
        return ends
    finally:
        consumer.close()


def committed(topic: str, group: str, end: dict[int, int]) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": services.KAFKA, "group.id": group})
    try:
        offsets = consumer.committed([TopicPartition(topic, p) for p in end], timeout=10)
        return sum(max(o.offset, 0) for o in offsets)
    finally:
        consumer.close()


def spark_session(config: Config, checkpoints: list[int], work: Path) -> Any:
    from cdcmirror.spark.session import build_spark_session

    spark = build_spark_session(config, "bench-peers")
    for seconds in checkpoints:
        name = f"spark.sql.catalog.peer{seconds}"
        spark.conf.set(name, "org.apache.iceberg.spark.SparkCatalog")
        spark.conf.set(f"{name}.type", "hadoop")
        spark.conf.set(f"{name}.warehouse", f"file://{work / f'flink{seconds}'}")
    return spark


def canonical(frame: Any) -> Any:
    """The source's columns as text, the same whatever types each side stores."""
    from pyspark.sql import functions as F

    return frame.select(
        F.col("id").cast("string"),
        F.col("a").cast("string"),
        F.col("b").cast("decimal(12,2)").cast("string"),
        "c",
        "d",
        F.date_format("e", MICROS),
        F.date_format("f", MICROS),
        F.col("g").cast("string"),
        F.col("h").cast("string"),
        F.col("k").cast("string"),
    )


def source_rows(spark: Any, schema: str) -> Any:
    frame = spark.read.jdbc(
        f"jdbc:postgresql://127.0.0.1:5432/{services.TEST_DATABASE}",
        f"{schema}.items",
        properties={
            "driver": "org.postgresql.Driver",
            "user": "cdc",
            "password": services.CDC_PASSWORD,
        },
    )
    return canonical(frame).cache()


def differing(spark: Any, table: str, source: Any, snapshot: int | None = None) -> int:
    reader = spark.read if snapshot is None else spark.read.option("versionAsOf", snapshot)
    rows = canonical(reader.table(table))
    return int(rows.exceptAll(source).count() + source.exceptAll(rows).count())


def time_to_equality(spark: Any, run: Run, source: Any) -> None:
    snapshots = spark.sql(
        f"SELECT snapshot_id, unix_millis(committed_at) AS at FROM {run.table}.snapshots "
        "ORDER BY committed_at"
    ).collect()
    run.snapshots = len(snapshots)
    low, high = 0, len(snapshots)  # the first equal one is in [low, high]; high: none
    while low < high:
        middle = (low + high) // 2
        if differing(spark, run.table, source, snapshots[middle].snapshot_id) == 0:
            high = middle
        else:
            low = middle + 1
    if high == len(snapshots):
        run.differing = differing(spark, run.table, source)
        return
    run.equal_after = snapshots[high].at / 1000 - run.started


def report(runs: list[Run], rows: int, changes: int) -> None:
    print(f"\n{rows:,} rows read by the snapshot, then {changes:,} changes:")
    for run in runs:
        if run.equal_after is None:
            print(
                f"  {run.label}: NEVER equal ({run.differing} rows differ), "
                f"{run.snapshots} snapshots"
            )
            continue
        print(
            f"  {run.label}: equal to the source {run.equal_after:.1f}s after start "
            f"({run.snapshots} snapshots)"
        )
    equal = [(r.label, r.equal_after) for r in runs if r.equal_after is not None]
    spark_side = [(label, after) for label, after in equal if not label.startswith("Flink")]
    for peer, seconds in equal:
        if peer.startswith("Flink"):
            ratios = ", ".join(f"{label} {after / seconds:.2f}x" for label, after in spark_side)
            print(f"  time to equality / {peer}'s: {ratios}")


def read_costs(spark: Any, runs: list[Run]) -> None:
    print("\nfull scan afterwards (count(*), sum(hash(c)); median of 5 after a warm-up):")
    for run in runs:
        query = f"SELECT count(*), sum(hash(c)) FROM {run.table}"
        spark.sql(query).collect()
        times = []
        for _ in range(5):
            started = time.monotonic()
            spark.sql(query).collect()
            times.append(time.monotonic() - started)
        files = spark.sql(
            f"SELECT content, count(*) AS n FROM {run.table}.files "
            "GROUP BY content ORDER BY content"
        ).collect()
        kinds = ", ".join(
            f"{r.n} {('data', 'position delete', 'equality delete')[r.content]}" for r in files
        )
        print(f"  {run.label}: {statistics.median(times):.2f}s ({kinds} files)")


def replay_round(
    spark: Any,
    peer: FlinkPeer,
    env: dict[str, str],
    work: Path,
    topic: str,
    runs: list[Run],
    seconds: int,
    source: Any,
) -> None:
    history = end_offsets(topic)
    resent = resend(topic, history)
    reads = resend(topic, history, reads_only=True)
    print(
        f"\nreplay: the topic's {resent:,} records produced again after the changes, "
        f"then its {reads:,} snapshot reads once more"
    )
    run_mirror(env, work, runs[0].table, "cdcmirror replay")
    warehouse = work / f"flink{seconds}"
    run_flink(peer, topic, warehouse, seconds, (warehouse / "group").read_text())
    for run in (runs[0], next(r for r in runs if r.table.startswith(f"peer{seconds}."))):
        spark.sql(f"REFRESH TABLE {run.table}")
        table = canonical(spark.table(run.table))
        missing = source.exceptAll(table).count()
        extra = table.exceptAll(source).count()
        verdict = "equal to the source" if missing == extra == 0 else "WRONG"
        print(f"  {run.label}: {verdict}: {missing:,} source rows missing, {extra:,} rows extra")


def is_read(value: bytes | None) -> bool:
    return value is not None and json.loads(value)["payload"]["op"] == "r"


def read(consumer: Any, topic: str, partition: int, start: int, end: int) -> Iterator[Any]:
    """The partition's records in [start, end) (the end may be a transaction marker, which
    is never delivered: the consumer's position tells when the end is reached)."""
    from confluent_kafka import TopicPartition

    consumer.assign([TopicPartition(topic, partition, start)])
    while consumer.position([TopicPartition(topic, partition)])[0].offset < end:
        for message in consumer.consume(1000, timeout=1):
            if not message.error() and message.offset() < end:
                yield message


def resend(topic: str, ends: dict[int, int], reads_only: bool = False) -> int:
    """Produce every record of the topic up to ``ends`` again, in order; with
    ``reads_only``, only the snapshot's reads (``op`` "r")."""
    from confluent_kafka import Consumer, Producer

    consumer = Consumer(
        {
            "bootstrap.servers": services.KAFKA,
            "group.id": services.unique("r"),
            "enable.auto.commit": False,
        }
    )
    producer = Producer({"bootstrap.servers": services.KAFKA, "linger.ms": 20})
    count = 0
    try:
        for partition, end in ends.items():
            for message in read(consumer, topic, partition, 0, end):
                if reads_only and not is_read(message.value()):
                    continue
                producer.produce(topic, message.value(), message.key(), partition=partition)
                producer.poll(0)
                count += 1
        producer.flush(60)
    finally:
        consumer.close()
    return count


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    every = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--checkpoints=")), "2,10")
    with services.forgetting_made():
        main(
            int(args[0]) if args else 20_000,
            int(args[1]) if len(args) > 1 else 80_000,
            [int(s) for s in every.split(",") if s],  # none: cdcmirror alone
            "--no-replay" not in sys.argv,
            "--no-plain" not in sys.argv,
        )
