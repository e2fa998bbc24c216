"""Benchmark: a plain event stream (``[[streams]]``) appended to Iceberg, in one process.

1. N small JSON events (about 110 bytes: user, page, ms, ts, n) are produced to a topic of 2
   partitions, and with ``--avro`` the same N events as Avro (Confluent wire format, schema
   registered in the stack's registry) to another;
2. plain Spark: a batch read of the topic, ``from_json`` (or ``from_avro`` of the body
   after the 5-byte frame) with the same columns, the Kafka coordinates, appended to a new
   Iceberg table partitioned by day of the Kafka timestamp, as the stream's is: the bound
   on this machine;
3. cdcmirror: the stream's table made as bootstrap makes it (schema inferred from the
   topic), then `cdcmirror mirror --available-now` appends the topic in one batch (decode,
   dead-letter check, the exactly-once filter, the commit with its offsets).

Both run twice, alternating; the ratio uses the second round. Then, with ``--freshness
T1,T2``, for each trigger the continuous job runs in its own process while a producer sends
R events/s for S seconds: the delay of each event is ``_ingested_at - _kafka_timestamp``
(the batch's time at its commit minus the record's time), p50/p95/p99, and the data files
the table gained per hour. Needs the stack (`make stack-up`).

    .venv/bin/python benchmarks/stream_append.py [N] [--avro] [--freshness 1,10] [--seconds S]
        [--rate R] [--events-per-task N]

``--events-per-task``: the job's ``mirror.events_per_task`` (default 25,000, the config's
default; 0: one task per Kafka partition, as the plain read has).
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from cdcmirror.catalog import load_catalog
from cdcmirror.commands.mirror import mirror
from cdcmirror.commands.streams import apply_stream_plans, plan_streams
from cdcmirror.config import Config, load_config
from cdcmirror.spark.session import build_spark_session
from support import services
from support.mirror_env import MirrorJob

SCHEMA = "user BIGINT, page STRING, ms DOUBLE, ts STRING, n BIGINT"
EVENTS_PER_TASK = 25_000  # mirror.events_per_task (--events-per-task N)


AVRO = {
    "type": "record",
    "name": "Click",
    "fields": [
        {"name": "user", "type": "long"},
        {"name": "page", "type": "string"},
        {"name": "ms", "type": "double"},
        {"name": "ts", "type": "string"},
        {"name": "n", "type": "long"},
    ],
}


def produce(
    topic: str, n: int, start: int = 0, rate: float = 0.0, avro_id: int | None = None
) -> None:
    """``n`` events; with ``rate``, at about that many per second; with ``avro_id``, as
    Avro in the Confluent wire format."""
    import io

    import fastavro

    parsed = fastavro.parse_schema(AVRO)
    rnd = random.Random(start)
    producer = Producer({"bootstrap.servers": services.KAFKA, "linger.ms": 20})
    began = time.monotonic()
    for i in range(start, start + n):
        event = {
            "user": rnd.randrange(100_000),
            "page": f"/product/{rnd.randrange(5000)}",
            "ms": round(rnd.random() * 1000, 3),
            "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "n": i,
        }
        if avro_id is None:
            value = json.dumps(event).encode()
        else:
            body = io.BytesIO()
            fastavro.schemaless_writer(body, parsed, event)
            value = b"\x00" + avro_id.to_bytes(4, "big") + body.getvalue()
        while True:
            try:
                producer.produce(topic, value, key=str(i % 64).encode())
                break
            except BufferError:
                producer.poll(0.1)
        if rate and (i - start) % 100 == 0:
            ahead = (i - start) / rate - (time.monotonic() - began)
            if ahead > 0:
                time.sleep(ahead)
    producer.flush(120)


def config_for(
    name: str, topic: str, work: Path, trigger: str = "10 seconds", avro: bool = False
) -> Config:
    env = {
        "CDCMIRROR_SOURCE__NAME": name,
        "CDCMIRROR_ICEBERG__NAMESPACE": name,
        "CDCMIRROR_MIRROR__CHECKPOINT_LOCATION": f".cdcmirror/checkpoints/{name}",
        "CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH": "0",
        "CDCMIRROR_MIRROR__EVENTS_PER_TASK": str(EVENTS_PER_TASK),
        "CDCMIRROR_MIRROR__TRIGGER": trigger,
        "CDCMIRROR_STREAMS__0__TOPIC": topic,
        "CDCMIRROR_STREAMS__0__TABLE": "events",
        "CDCMIRROR_STREAMS__0__SCHEMA": f"{topic}-value" if avro else "infer",
        "CDCMIRROR_STREAMS__0__FORMAT": "avro" if avro else "json",
        "CDCMIRROR_STREAMS__0__PARTITION": "day(_kafka_timestamp)",
    }
    return load_config(environ=env, cwd=work)


def plain(spark: Any, topic: str, n: int, name: str, avro: bool = False) -> float:
    """Seconds of a plain Spark Kafka read -> from_json (from_avro) -> Iceberg append."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    value = (
        from_avro(F.expr("substring(value, 6)"), json.dumps(AVRO))
        if avro
        else F.from_json(F.col("value").cast("string"), SCHEMA)
    )
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}")
    started = time.monotonic()
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", services.KAFKA)
        .option("subscribe", topic)
        .load()
        .select(
            value.alias("e"),
            "topic",
            "partition",
            "offset",
            "timestamp",
        )
        .select("e.*", "topic", "partition", "offset", "timestamp")
    )
    # partitioned as the stream's table is (day(_kafka_timestamp))
    frame.writeTo(f"{name}.events").using("iceberg").partitionedBy(F.days("timestamp")).create()
    seconds = time.monotonic() - started
    assert spark.table(f"{name}.events").count() == n
    return seconds


def cdcmirror_append(
    spark: Any, topic: str, n: int, name: str, work: Path, avro: bool = False
) -> float:
    config = config_for(name, topic, work, avro=avro)
    catalog = load_catalog(config)
    apply_stream_plans(config, catalog, plan_streams(config, catalog))
    started = time.monotonic()
    mirror(config, available_now=True)
    seconds = time.monotonic() - started
    assert spark.table(f"{name}.events").count() == n
    return seconds


def freshness(trigger: int, seconds: int, rate: int, work: Path) -> str:
    name = services.unique("bench_fresh")
    topic = f"{name}.events"
    services.create_topic(topic, 2)
    produce(topic, 100)
    config = config_for(name, topic, work, f"{trigger} seconds")
    catalog = load_catalog(config)
    apply_stream_plans(config, catalog, plan_streams(config, catalog))
    path = work / f"{name}.toml"
    path.write_text("", "utf-8")
    env = _env_of(name, topic, trigger)
    job = MirrorJob(path, f"{trigger} seconds", env)
    try:
        time.sleep(20)  # the job's start
        began = time.monotonic()
        produce(topic, rate * seconds, start=100, rate=rate)
        took = time.monotonic() - began
        time.sleep(trigger + 15)
    finally:
        job.stop()
    spark = build_spark_session(config, "bench-stream")
    row = spark.sql(
        "SELECT percentile_approx(d, array(0.5, 0.95, 0.99)) AS p, count(*) AS n FROM ("
        "SELECT unix_micros(_ingested_at) / 1e6 - unix_micros(_kafka_timestamp) / 1e6 AS d "
        f"FROM {name}.events WHERE n >= 100)"
    ).first()
    files = spark.sql(f"SELECT count(*) FROM {name}.events.files").first()[0]
    per_hour = files / (took + trigger + 15) * 3600
    p50, p95, p99 = row.p
    return f"| {trigger} | {row.n:,} | {p50:.1f} | {p95:.1f} | {p99:.1f} | {per_hour:,.0f} |"


def _env_of(name: str, topic: str, trigger: int) -> dict[str, str]:
    return {
        "CDCMIRROR_SOURCE__NAME": name,
        "CDCMIRROR_ICEBERG__NAMESPACE": name,
        "CDCMIRROR_MIRROR__CHECKPOINT_LOCATION": f".cdcmirror/checkpoints/{name}",
        "CDCMIRROR_MIRROR__TRIGGER": f"{trigger} seconds",
        "CDCMIRROR_STREAMS__0__TOPIC": topic,
        "CDCMIRROR_STREAMS__0__TABLE": "events",
        "CDCMIRROR_STREAMS__0__SCHEMA": "infer",
        "CDCMIRROR_STREAMS__0__PARTITION": "day(_kafka_timestamp)",
    }


def compare(spark: Any, n: int, work: Path, avro: bool) -> None:
    """Both appends of N events, twice, alternating; the second round's ratio."""
    from support.services import register_schema

    kind = "Avro" if avro else "JSON"
    base = services.unique("bench_stream")
    topic = f"{base}.events"
    services.create_topic(topic, 2)
    avro_id = register_schema(f"{topic}-value", AVRO) if avro else None
    started = time.monotonic()
    produce(topic, n, avro_id=avro_id)
    print(f"produced {n:,} {kind} events in {time.monotonic() - started:.1f} s", flush=True)
    rounds = []
    for r in (1, 2):
        p = plain(spark, topic, n, f"{base}_plain{r}", avro)
        c = cdcmirror_append(spark, topic, n, f"{base}_m{r}", work, avro)
        rounds.append((p, c))
        print(
            f"{n:,} {kind} events, round {r}: plain Spark Kafka -> Iceberg {p:.1f} s "
            f"({n / p:,.0f} events/s); cdcmirror stream {c:.1f} s ({n / c:,.0f} events/s)",
            flush=True,
        )
    p, c = rounds[1]
    print(f"{n:,} {kind} events: cdcmirror / plain append = {p / c:.2f}x", flush=True)


def main(n: int, avro: bool, triggers: list[int], seconds: int, rate: int) -> None:
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.chdir(work)
        spark = build_spark_session(config_for("x", "x", work), "bench-stream")
        for kind in ([False, True] if avro else [False]) if n else []:
            compare(spark, n, work, kind)
        if triggers:
            print(f"\nfreshness, {rate} events/s for {seconds} s, one stream of 2 partitions")
            print("| trigger s | events | p50 s | p95 s | p99 s | data files/h |")
            print("| --- | --- | --- | --- | --- | --- |")
            for t in triggers:
                print(freshness(t, seconds, rate, work), flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    opts = {"--freshness": "", "--seconds": "120", "--rate": "500", "--events-per-task": "25000"}
    for key in list(opts):
        if key in args:
            i = args.index(key)
            opts[key] = args[i + 1]
            del args[i : i + 2]
    with_avro = "--avro" in args
    args = [a for a in args if a != "--avro"]
    count = int(args[0]) if args else 1_000_000
    trig = [int(x) for x in opts["--freshness"].split(",") if x]
    EVENTS_PER_TASK = int(opts["--events-per-task"])
    with services.forgetting_made():
        main(count, with_avro, trig, int(opts["--seconds"]), int(opts["--rate"]))
