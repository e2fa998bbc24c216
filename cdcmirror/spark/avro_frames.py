"""Avro values of a batch turned into the JSON converter's text by Spark itself.

Each schema id of the batch gets Spark's own Avro reader (``from_avro``) over the body after
the 5-byte frame, with the schema's logical types removed (``avro.plain_schema``: values as
written, like the JSON converter), then ``to_json``. No Python runs per row. A schema Spark
cannot read, an id the registry lacks, an unframed value and a body that does not fit its
schema each become a ``_decode_error`` (the event is dead-lettered, the batch goes on).
"""

from __future__ import annotations

import json
import threading
from functools import reduce
from operator import and_
from typing import Any

from cdcmirror.mirror.avro import (
    HEADER,
    SCHEMA_ID_SQL,
    avro_error_sql,
    plain_schema,
    record_fields,
)

_PERMISSIVE = {"mode": "PERMISSIVE"}  # a body that does not fit its schema reads as NULL
_KEEP_NULLS = {"ignoreNullFields": "false"}  # "field": null, as the JSON converter writes


class AvroFrames:
    """Decodes the framed values of batches; what Spark makes of each schema id is kept."""

    def __init__(self) -> None:
        # schema id -> plain schema JSON Spark can read, and its record's field names
        self._usable: dict[int, tuple[str, list[str]]] = {}
        self._problems: dict[int, str] = {}
        self._lock = threading.Lock()

    def with_ids(self, df: Any) -> Any:
        """``df`` with ``_schema_id`` (NULL for a value that is not framed)."""
        from pyspark.sql import functions as F

        return df.withColumn("_schema_id", F.expr(SCHEMA_ID_SQL))

    def decode(self, framed: Any, schemas: dict[int, str]) -> Any:
        """``framed`` (with ``_schema_id``) plus ``_json`` and ``_decode_error``; ``schemas``:
        the registry's text of the batch's ids (ids it lacks are left out)."""
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        usable = {sid: self._check(framed.sparkSession, sid, text) for sid, text in schemas.items()}
        body = F.expr(f"substring(value, {HEADER + 1})")
        text: Any = F.lit(None).cast("string")
        for sid, known in sorted(usable.items()):
            if known is None:
                continue
            plain, fields = known
            record = from_avro(body, plain, _PERMISSIVE)
            # a body that does not fit reads as a record whose every field is NULL
            fits = ~reduce(and_, [record[f].isNull() for f in fields])
            decoded = F.when(fits, F.to_json(record, _KEEP_NULLS))
            text = F.when(F.col("_schema_id") == sid, decoded).otherwise(text)
        readable = [sid for sid, plain in usable.items() if plain is not None]
        problems = {sid: self._problems[sid] for sid, plain in usable.items() if plain is None}
        return framed.withColumn("_json", F.when(F.col("value").isNotNull(), text)).withColumn(
            "_decode_error", F.expr(avro_error_sql(readable, problems))
        )

    def _check(self, spark: Any, sid: int, text: str) -> tuple[str, list[str]] | None:
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
