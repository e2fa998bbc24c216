"""Where a read-once batch's decode spends its time: the applier's own decode of one
table's Kafka records, timed step by step on the same records (``mixed_batch.py
--decode-steps`` calls :func:`decode_steps` after each round).

Each step is the step before it plus one stage, written to Spark's ``noop`` sink (the
faster of two runs), so the difference between two steps is the cost of the stage:

- ``read``: the Kafka records only;
- ``checked``: with the UTF-8 check (JSON) or the Avro bodies read (``records.once``, then
  ``avro_frames`` with the table's envelope, as the decode reads them);
- ``parsed``: the envelope parsed (``from_json``; JSON with schemas from its payload,
  ``schema_parts.payload_text_sql``, as the decode parses it; Avro: built from the record
  where its schema fits, ``avro_envelope.py``), nothing else;
- ``decoded``: every decoded column (``decode_events``: positions, values, checks);
- ``kept``: decoded, kept and aggregated in one job (``kept.keep``): the ``decode`` phase;
- ``held``, ``decoded, held``: the records held in memory (read from Kafka and persisted
  first), then the ``decoded`` step over them: the decode without Kafka's read.
"""

from __future__ import annotations

import time
from typing import Any

from cdcmirror.catalog import load_catalog
from cdcmirror.checkpoint_store import checkpoint_files, remembered_schemas
from cdcmirror.clients.registry import SchemaRegistry
from cdcmirror.commands.job_tables import load_tables
from cdcmirror.config import Config
from cdcmirror.config.kafka_security import spark_kafka_options
from cdcmirror.mirror.avro_envelope import ENVELOPE, AvroEnvelope
from cdcmirror.mirror.batch_aggregate import aggregate_exprs
from cdcmirror.mirror.envelope import envelope_ddl
from cdcmirror.mirror.schema_parts import payload_text_sql
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.cdc.decode import decode_events, keep, let_go
from cdcmirror.spark.cdc.plan import TopicBatch
from cdcmirror.spark.cdc.records import Formats, once
from cdcmirror.spark.kafka import read_ranges
from cdcmirror.spark.session import build_spark_session


def noop_seconds(frame: Any, runs: int = 2) -> float:
    """Seconds of writing ``frame`` to Spark's ``noop`` sink, the fastest of ``runs``."""
    times = []
    for _ in range(runs):
        started = time.monotonic()
        frame.write.format("noop").mode("overwrite").save()
        times.append(time.monotonic() - started)
    return min(times)


def decode_steps(config: Config, fmt: str, topic: str, start: int, end: int) -> dict[str, float]:
    """Seconds of each step (module doc) over ``topic``'s records ``start``..``end``."""
    from pyspark.sql import functions as F

    spark: Any = build_spark_session(config)
    table = load_tables(config, load_catalog(config))[0]
    known = remembered_schemas(checkpoint_files(config)).of(table)
    if known is None:
        raise SystemExit(f"{table.identifier}: no row schemas kept in the checkpoint")
    registry = (
        SchemaRegistry(config.kafka.schema_registry_url, auth=config.kafka.registry_auth)
        if fmt == "avro"
        else None
    )
    kind = "avro" if fmt == "avro" else "json" if fmt == "json" else "schemaless"
    schemas = fmt == "json"

    def records() -> Any:
        ranges = {topic: {0: (start, end)}}
        options = spark_kafka_options(config.kafka)
        return read_ranges(spark, options, ranges, config.mirror.events_per_task)

    frames = AvroFrames()

    def checked_of(read: Any) -> Any:
        batch = TopicBatch(topic, end - start, {0: end}, {0: start}, frozenset(known))
        checked = once(read, batch, Formats(kind, frames, registry))
        if registry is not None:  # the bodies read as the decode reads them
            texts = registry.schemas(sorted(int(k) for k in known))
            checked = frames.decode(checked, texts, envelope=AvroEnvelope(table))
        return checked

    checked = checked_of(records())
    events = checked.where("value IS NOT NULL")
    if registry is not None:
        text = F.col("_cdc_json")
    else:  # JSON with schemas: from the payload, as the decode parses it
        text = F.expr(payload_text_sql(sorted(known)) if schemas else "CAST(value AS STRING)")
    env = F.from_json(text, envelope_ddl(table, schemas))
    if registry is not None:  # built from the record where its schema fits
        env = F.coalesce(F.col(ENVELOPE), env)
    parsed = events.select(env.alias("e"))
    top = "e.payload" if schemas else "e"
    parsed = parsed.select(f"{top}.after.*", f"{top}.op", f"{top}.source.*")

    def decoded_of(events: Any) -> Any:
        return decode_events(events, table, schemas, registry is not None, [*known], sorted(known))

    decoded = decoded_of(events)
    out = {
        "read": noop_seconds(records()),
        "checked": noop_seconds(checked),
        "parsed": noop_seconds(parsed),
        "decoded": noop_seconds(decoded),
    }
    times = []
    for _ in range(2):
        started = time.monotonic()
        kept, _values = keep(decoded, aggregate_exprs(table))
        times.append(time.monotonic() - started)
        let_go(kept)
    out["kept"] = min(times)
    held = records().persist()  # the same records in memory: the decode without Kafka's read
    held.count()
    out["held"] = noop_seconds(held)
    out["decoded, held"] = noop_seconds(decoded_of(checked_of(held).where("value IS NOT NULL")))
    held.unpersist()
    return out
