"""A table's Debezium events of a batch decoded into rows: the envelope parsed with the
table's schema, each wire value converted by the carrier of its event's own row schema
(``mirror/envelope.py``, ``mirror/carriers.py``), bad values flagged in ``_cdc_error`` (dead
letters), never guessed; then kept, with one aggregate over them observed on the way
(``mirror/batch_aggregate.py``).

Kept by ``localCheckpoint`` rather than a cache: every later query of the batch plans over
the kept rows, not over the plan that made them (the decode's from_json and conversions are
analysed once, not once per query), and the aggregate costs no job of its own. A lost
executor's blocks are not recomputed: the batch is run again (``spark/batches.py``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdcmirror.mirror.avro import WriterSchemas
from cdcmirror.mirror.avro_envelope import ENVELOPE, AvroEnvelope
from cdcmirror.mirror.batch_aggregate import BatchAggregate, aggregate_exprs
from cdcmirror.mirror.carriers import DECIMAL_TEXT_UDF, decimal_text
from cdcmirror.mirror.envelope import (
    JSON_OPTIONS,
    NOT_UTF8_SQL,
    UTF8,
    Variants,
    checked_exprs,
    decoded_exprs,
    envelope_ddl,
    raw_rows_ddl,
    raw_rows_sql,
    wire_exprs,
)
from cdcmirror.mirror.evolution import (
    NEW_SCHEMA,
    known_ids_sql,
    known_names_sql,
    schema_key,
    schema_key_sql,
)
from cdcmirror.mirror.schema_parts import (
    known_schema_sql,
    part_column,
    part_sql,
    payload_text_sql,
    utf8_sql,
)
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.sql_text import sql_string

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def register_functions(spark: SparkSession) -> None:
    """The functions the decoding SQL calls, on ``spark`` (a session or its parent)."""
    spark.udf.register(DECIMAL_TEXT_UDF, decimal_text, "string")


def with_utf8_check(records: DataFrame, parts: list[str] | None = None) -> DataFrame:
    """JSON records: the column that says whether each value is UTF-8 (checked once per
    batch, for the summary and every table's decode); ``parts``: the schema parts the values
    are expected to start with, checked after them (``schema_parts.utf8_sql``), with the
    column of the part each value starts with (:func:`with_parts`)."""
    from pyspark.sql import functions as F

    if parts:
        records = with_parts(records, parts)
    return records.withColumn(UTF8, F.expr(utf8_sql(parts or [])))


def with_parts(records: DataFrame, parts: list[str]) -> DataFrame:
    """JSON records with the ``schema_parts.part_column`` of ``parts`` (each value compared
    with them once), unless they have it."""
    from pyspark.sql import functions as F

    column = part_column(parts)
    return (
        records
        if column in records.columns
        else records.withColumn(column, F.expr(part_sql(parts)))
    )


@dataclass(frozen=True)
class AvroReads:
    """How a batch read once reads its Avro bodies: the job's frames and registry."""

    frames: AvroFrames
    registry: WriterSchemas


def decode_events(
    events: DataFrame,
    table: MirrorTable,
    schemas: bool,
    avro: bool | AvroReads,
    known: list[str] | None = None,
    parts: list[str] | None = None,
    carriers: Mapping[str, Mapping[str, str]] | None = None,
    transactions: bool = False,
) -> DataFrame:
    """``events``: Kafka records of ``table`` (JSON: with :func:`with_utf8_check`; Avro: with
    ``_cdc_json`` and ``_cdc_decode_error`` from ``avro_frames``, or, read once, with
    ``_cdc_schema_id`` only: the bodies of the ``known`` ids are read here, by ``avro``'s
    frames, with the envelope of ``table`` as it stands, ``avro_envelope.py``). ``schemas``:
    JSON with schemas; ``known``: its row schemas the table took (Avro: schema ids;
    schemaless JSON: field name lists), an event of another one is marked
    (``evolution.NEW_SCHEMA``, ``spark/cdc/plan.py``); ``parts``: the batch's row
    schemas (JSON with schemas: its events are parsed from their payloads,
    ``schema_parts.payload_text_sql``); ``carriers``: by schema key
    (``evolution.schema_key``), the carriers its events decode with where the columns' differ
    (``batch_evolution.Verdict.carriers``); ``transactions``: each event's transaction read
    too (``_cdc_tx``, for the consistent tag)."""
    from pyspark.sql import functions as F

    built = False  # every envelope built from its record: no JSON text to parse
    if isinstance(avro, AvroReads) and "_cdc_json" not in events.columns:
        texts = avro.registry.schemas(sorted(int(k) for k in known or []))
        envelope = AvroEnvelope(table, transactions)
        events = avro.frames.decode(events, texts, envelope=envelope)
        built = avro.frames.builds_every_envelope(events.sparkSession, texts, envelope)
    if schemas and parts and not avro:
        events = with_parts(events, parts)
    error = "_cdc_decode_error" if avro else NOT_UTF8_SQL
    if known is not None and avro:  # an id not known is not decoded: new, not an error
        error = f"IF({known_ids_sql([int(k) for k in known])}, {error}, '{NEW_SCHEMA}')"
    elif known is not None:
        seen = known_schema_sql(known, parts) if schemas else known_names_sql(known)
        error = f"coalesce({error}, IF({seen}, NULL, '{NEW_SCHEMA}'))"
    if avro:
        text = F.col("_cdc_json")
    else:
        text = F.expr(payload_text_sql(parts or []) if schemas else "CAST(value AS STRING)")
    env = F.from_json(text, envelope_ddl(table, schemas, transactions), JSON_OPTIONS)
    raw = F.expr(raw_rows_sql("env", schemas))
    if built:  # and no ``from_json`` in the plan: Spark compiles no projection holding
        # one into its stage's generated code, so each row would be written out and read
        # back around it; a built envelope holds no unreadable value either
        env, raw = F.col(ENVELOPE), F.lit(None).cast(f"STRUCT<{raw_rows_ddl(schemas)}>")
    elif avro and ENVELOPE in events.columns:  # built from the record, no JSON text
        env = F.when(F.col(ENVELOPE).isNotNull(), F.col(ENVELOPE)).otherwise(env)
    parsed = events.withColumn("env", env).withColumn("_cdc_raw", raw)
    variants = _variants(carriers or {}, bool(avro), parts)
    return (
        parsed.selectExpr(*wire_exprs(table, schemas, error, variants, transactions))
        .selectExpr(*decoded_exprs(table, variants))
        .selectExpr(*checked_exprs(table))
    )


def _variants(
    carriers: Mapping[str, Mapping[str, str]], avro: bool, parts: list[str] | None
) -> Variants:
    """``carriers`` by schema key as conditions over the Kafka rows: an Avro event's schema
    id; a JSON event's schema part, by its number in ``parts`` (the column ``with_parts``
    made), or by the key of its schema part where the parts are not given."""
    if avro:
        return tuple((f"_cdc_schema_id = {int(key)}", cs) for key, cs in sorted(carriers.items()))
    numbers = {schema_key("json", p): i for i, p in enumerate(sorted(set(parts or [])), 1)}
    out = []
    for key, cs in sorted(carriers.items()):
        if key in numbers:
            out.append((f"{part_column(parts or [])} = {numbers[key]}", cs))
        else:
            out.append((f"{schema_key_sql('json')} = {sql_string(key)}", cs))
    return tuple(out)


def keep(df: DataFrame, exprs: list[str]) -> tuple[DataFrame, dict[str, object]]:
    """``df`` computed and kept now, in one Spark job that also aggregates ``exprs``
    (``expr AS name``, numbers or text); the kept frame and the aggregate's values by name.
    The values come back as one JSON text: read from Python, each entry of an observed
    metrics map costs round trips."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen = Observation(f"cdcmirror_kept_{uuid.uuid4().hex}")
    values = f"to_json(struct({', '.join(exprs)}), map('ignoreNullFields', 'false')) AS v"
    kept = df.observe(seen, F.expr(values)).localCheckpoint(eager=True)
    out: dict[str, object] = json.loads(str(seen.get["v"]))
    return kept, out


def kept_with_aggregate(decoded: DataFrame, table: MirrorTable) -> tuple[DataFrame, BatchAggregate]:
    """The decoded events kept (:func:`keep`) and their aggregate."""
    kept, values = keep(decoded, aggregate_exprs(table))
    return kept, BatchAggregate.of(values)


def aggregate_of(kept: DataFrame, table: MirrorTable) -> BatchAggregate:
    """The aggregate of a part of the kept events (one small job over the kept blocks)."""
    exprs = aggregate_exprs(table)
    values = f"to_json(struct({', '.join(exprs)}), map('ignoreNullFields', 'false')) AS v"
    row = kept.selectExpr(values).collect()[0]
    return BatchAggregate.of(json.loads(str(row["v"])))


def let_go(kept: DataFrame) -> None:
    """Free the blocks of a frame from :func:`keep` (else they stay until the JVM collects
    the frame's objects); the frame must not be read after."""
    kept._jdf.logicalPlan().rdd().unpersist(False)
