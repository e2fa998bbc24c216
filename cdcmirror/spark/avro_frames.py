"""Avro values of a batch turned into the JSON converter's text by Spark itself.

Each schema id of the batch gets Spark's own Avro reader (``from_avro``) over the body after
the 5-byte frame, with the schema's logical types removed (``avro.plain_schema``: values as
written, like the JSON converter), then ``to_json``. No Python runs per row. A schema Spark
cannot read, an id the registry lacks, an unframed value and a body that does not fit its
schema each become a ``_cdc_decode_error`` (the event is dead-lettered, the batch goes on), and
so does a string that is not UTF-8 (Spark's reader does not check; ``to_json`` would write
U+FFFD for each bad byte). An event stream's schema whose fields are its columns' own types
is read straight into the columns, no JSON text made (``streams/avro_direct.py``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from functools import reduce
from operator import and_
from typing import TYPE_CHECKING, Any

from cdcmirror.cdc_columns import IcebergColumn
from cdcmirror.iceberg_types import spark_type
from cdcmirror.mirror.avro import (
    HEADER,
    NOT_UTF8,
    SCHEMA_ID_SQL,
    WriterSchemas,
    avro_error_sql,
    holds_strings,
    name_record,
    named_type,
    plain_schema,
    record_fields,
)
from cdcmirror.mirror.avro_envelope import ENVELOPE, AvroEnvelope
from cdcmirror.sql_text import q
from cdcmirror.streams.avro_direct import direct_fields
from cdcmirror.streams.sql import UNREADABLE

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

AvroNode = Any  # a node of an Avro schema's JSON: a name, a union (list) or a type (object)
_PERMISSIVE = {"mode": "PERMISSIVE"}  # a body that does not fit its schema reads as NULL
_KEEP_NULLS = {"ignoreNullFields": "false"}  # "field": null, as the JSON converter writes


def _struct_ddl(columns: Sequence[IcebergColumn]) -> str:
    """The Spark type of a stream's event struct (its columns, then ``_cdc_unreadable``)."""
    fields = [f"{q(c.name)}: {spark_type(c.type)}" for c in columns]
    return f"STRUCT<{', '.join([*fields, f'{UNREADABLE}: STRING'])}>"


def _event(record: Column, columns: Sequence[IcebergColumn], fields: list[str]) -> Column:
    """The stream's event struct from a record whose ``fields`` are columns of their types
    or wider ones (``avro_direct.fits``: the cast widens without loss, or changes nothing but
    a NULL's type; a column it lacks is NULL)."""
    from pyspark.sql import functions as F

    values = [
        (record[c.name] if c.name in fields else F.lit(None)).cast(spark_type(c.type)).alias(c.name)
        for c in columns
    ]
    return F.struct(*values, F.lit(None).cast("string").alias(UNREADABLE))


def _text_valid(value: Column, node: AvroNode, named: dict[str, Any]) -> Column | None:
    """True when every string in ``value`` (read by Spark with the Avro schema ``node``;
    ``named``: the records named so far) is UTF-8, which Spark's Avro reader does not check
    (``to_json`` would write each bad byte as U+FFFD: a changed value); None when the
    schema holds no string."""
    from pyspark.sql import functions as F

    if isinstance(node, list):  # ["null", T] is a T; several types: struct member0, ...
        kinds = [k for k in node if k != "null"]
        if len(kinds) == 1:
            return _text_valid(value, kinds[0], named)
        return _every([_text_valid(value[f"member{i}"], k, named) for i, k in enumerate(kinds)])
    if isinstance(node, str):
        if node == "string":
            return F.coalesce(F.call_function("is_valid_utf8", value), F.lit(True))
        target = named_type(node, named)
        return None if target is None else _text_valid(value, target, named)
    kind = node.get("type") if isinstance(node, dict) else None
    if kind == "record":
        name_record(node, named)
        fields = node.get("fields", [])
        return _every([_text_valid(value[f["name"]], f["type"], named) for f in fields])
    if kind == "array":
        return _each(value, node.get("items"), named)
    if kind == "map":  # its keys are strings
        keys = _each(F.map_keys(value), "string", named)
        return _every([keys, _each(F.map_values(value), node.get("values"), named)])
    return _text_valid(value, kind, named) if isinstance(kind, (str, list, dict)) else None


def _each(items: Column, node: AvroNode, named: dict[str, Any]) -> Column | None:
    """``_text_valid`` of every item of the array ``items`` (None: they hold no string)."""
    from pyspark.sql import functions as F

    if not holds_strings(node, named):
        return None

    def valid(item: Column) -> Column:
        check = _text_valid(item, node, named)
        return F.lit(True) if check is None else F.coalesce(check, F.lit(True))

    every = F.forall(items, valid)
    return F.coalesce(every, F.lit(True))


def _every(checks: list[Column | None]) -> Column | None:
    found = [c for c in checks if c is not None]
    return reduce(and_, found) if found else None


def _values(
    known: dict[int, tuple[str, list[str]]],
    columns: Sequence[IcebergColumn] | None,
    envelope: AvroEnvelope | None,
) -> tuple[Column, Column, Column, Column]:
    """Over the records read per id (``_cdc_avro_<id>``; ``known``: each id's plain schema and
    field names): the JSON text, a stream's event struct, a CDC table's envelope (each for
    the ids that take it, ``AvroFrames.decode``), and whether a string is not UTF-8."""
    from pyspark.sql import functions as F

    text: Column = F.lit(None).cast("string")
    direct: Column = F.lit(None).cast(_struct_ddl(columns or []))
    env: Column = F.lit(None).cast(envelope.ddl if envelope else "string")
    not_utf8: Column = F.lit(None).cast("boolean")
    for sid, (plain, fields) in known.items():
        record, this = F.col(f"_cdc_avro_{sid}"), F.col("_cdc_schema_id") == sid
        valid = _text_valid(record, json.loads(plain), {})
        if valid is not None:
            not_utf8 = F.when(this, ~valid).otherwise(not_utf8)
        # a body that does not fit reads as a record whose every field is NULL
        fits = ~reduce(and_, [record[f].isNull() for f in fields])
        same = direct_fields(plain, columns) if columns else None
        if same is not None:
            direct = F.when(this & fits, _event(record, columns or [], same)).otherwise(direct)
        elif envelope and (built := envelope.sql(plain, f"_cdc_avro_{sid}")) is not None:
            env = F.when(this & fits, F.expr(built)).otherwise(env)
        else:
            text = F.when(this, F.when(fits, F.to_json(record, _KEEP_NULLS))).otherwise(text)
    return text, direct, env, not_utf8


class AvroFrames:
    """Decodes the framed values of batches; what Spark makes of each schema id is kept."""

    def __init__(self) -> None:
        # schema id -> plain schema JSON Spark can read, and its record's field names
        self._usable: dict[int, tuple[str, list[str]]] = {}
        self._problems: dict[int, str] = {}
        self._lock = threading.Lock()

    def with_ids(self, df: DataFrame) -> DataFrame:
        """``df`` with ``_cdc_schema_id`` (NULL for a value that is not framed)."""
        from pyspark.sql import functions as F

        return df.withColumn("_cdc_schema_id", F.expr(SCHEMA_ID_SQL))

    def decode_batch(self, df: DataFrame, registry: WriterSchemas) -> DataFrame:
        """A CDC batch's records with ``_cdc_schema_id``, ``_cdc_json`` and
        ``_cdc_decode_error``; the schemas of the batch's ids are fetched once, on the driver."""
        framed = self.with_ids(df)
        found = (
            framed.select("_cdc_schema_id").where("_cdc_schema_id IS NOT NULL").distinct().collect()
        )
        return self.decode(framed, registry.schemas([int(r[0]) for r in found]))

    def decode(
        self,
        framed: DataFrame,
        schemas: dict[int, str],
        columns: Sequence[IcebergColumn] | None = None,
        envelope: AvroEnvelope | None = None,
    ) -> DataFrame:
        """``framed`` (with ``_cdc_schema_id``) plus ``_cdc_json`` and ``_cdc_decode_error``;
        ``schemas``: the registry's text of the batch's ids (ids it lacks are left out). With a
        stream's ``columns``, also ``_cdc_avro``: the event as a struct of the columns, for the
        ids whose fields are the columns' types (``streams/avro_direct.py``; ``_cdc_json`` is
        NULL then). With a CDC table's ``envelope``, also ``_cdc_env``: the envelope its decode
        reads, for the ids whose fields give the JSON text's values (``avro_envelope.py``;
        ``_cdc_json`` is NULL then)."""
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        usable = {sid: self._check(framed.sparkSession, sid, text) for sid, text in schemas.items()}
        known = {sid: k for sid, k in sorted(usable.items()) if k is not None}
        # each id's record read once, in a column of its own (only for that id's values):
        # an expression naming the reader several times would run it each time
        body = F.expr(f"substring(value, {HEADER + 1})")
        framed = framed.select(
            "*",
            *(
                F.when(F.col("_cdc_schema_id") == sid, from_avro(body, plain, _PERMISSIVE)).alias(
                    f"_cdc_avro_{sid}"
                )
                for sid, (plain, _) in known.items()
            ),
        )
        text, direct, env, not_utf8 = _values(known, columns, envelope)
        readable = [sid for sid, plain in usable.items() if plain is not None]
        problems = {sid: self._problems[sid] for sid, plain in usable.items() if plain is None}
        framed = framed.withColumn("_cdc_json", F.when(F.col("value").isNotNull(), text))
        framed = framed.withColumn("_cdc_avro", direct).withColumn("_cdc_not_utf8", not_utf8)
        framed = framed.withColumn(ENVELOPE, env)
        unread = f"_cdc_json IS NULL AND _cdc_avro IS NULL AND {ENVELOPE} IS NULL"
        error = avro_error_sql(readable, problems, unread, (("_cdc_not_utf8", NOT_UTF8),))
        framed = framed.withColumn("_cdc_decode_error", F.expr(error))
        framed = framed.drop("_cdc_not_utf8", *(f"_cdc_avro_{sid}" for sid in known))
        framed = framed if columns else framed.drop("_cdc_avro")
        return framed if envelope else framed.drop(ENVELOPE)

    def builds_every_envelope(
        self, spark: SparkSession, schemas: dict[int, str], envelope: AvroEnvelope
    ) -> bool:
        """Whether ``decode`` with ``envelope`` builds it from the record for every id of
        ``schemas`` Spark reads: then no event of theirs has JSON text to parse."""
        usable = [self._check(spark, sid, text) for sid, text in schemas.items()]
        return all(envelope.sql(k[0], "r") is not None for k in usable if k is not None)

    def _check(self, spark: SparkSession, sid: int, text: str) -> tuple[str, list[str]] | None:
        """The plain schema of ``sid`` and its field names if Spark reads it, else None (the
        reason kept)."""
        with self._lock:
            if sid in self._usable:
                return self._usable[sid]
            if sid in self._problems:
                return None
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        try:
            plain = json.dumps(plain_schema(json.loads(text)))
            fields = record_fields(plain)
            if not fields:
                raise ValueError("not an Avro record with fields")
            spark.range(0).select(from_avro(F.lit(b""), plain, _PERMISSIVE)).schema  # noqa: B018
        except Exception as exc:  # a bad schema dead-letters its events, it does not stop
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            with self._lock:
                self._problems[sid] = f"schema id {sid} is not a usable Avro schema: {reason}"
            return None
        with self._lock:
            self._usable[sid] = (plain, fields)
        return plain, fields
