"""The tombstone tables: per mirrored table with hard deletes, the position and commit time
of every deleted key, so that an older change of that key arriving later (a replay, a
re-snapshot) is not written back (``mirror/merge_sql.py`` classifies against them)."""

from __future__ import annotations

from typing import Any

from cdcmirror.iceberg_types import spark_type
from cdcmirror.mirror.envelope import q, spark_name
from cdcmirror.mirror.spec import MirrorTable


class TombstoneTables:
    """Makes each table once per job (and again when its key was widened)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._keys: dict[str, tuple[str, ...]] = {}  # tombstone table -> key types

    def made(self) -> list[str]:
        """The Spark names of the tombstone tables this job has made or found."""
        return [spark_name(name) for name in self._keys]

    def ensure(self, spark: Any, table: MirrorTable) -> str:
        """The Spark name of ``table``'s tombstone table, made or widened if needed."""
        name = f"{self.namespace}.{table.identifier.split('.')[-1]}__deleted"
        wanted = tuple(spark_type(table.column(k).iceberg) for k in table.key)
        if self._keys.get(name) == wanted:
            return spark_name(name)
        cols = ", ".join(f"{q(k)} {t} NOT NULL" for k, t in zip(table.key, wanted, strict=True))
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {spark_name(name)} ({cols}, _cdc_position ARRAY<BIGINT>, "
            "_cdc_source_ts TIMESTAMP) "
            "USING iceberg TBLPROPERTIES ('format-version'='2', "
            "'write.merge.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
        )
        # the key was widened (int -> long, decimal precision up): widen the tombstones too,
        # or a deleted key past the old range could not be recorded
        stored = {
            f.name: f.dataType.simpleString() for f in spark.table(spark_name(name)).schema.fields
        }
        for k, wanted_type in zip(table.key, wanted, strict=True):
            if stored.get(k, "").upper() != wanted_type.upper():
                spark.sql(f"ALTER TABLE {spark_name(name)} ALTER COLUMN {q(k)} TYPE {wanted_type}")
        if "_cdc_source_ts" not in stored:  # made before tombstones kept the commit time
            spark.sql(f"ALTER TABLE {spark_name(name)} ADD COLUMN _cdc_source_ts TIMESTAMP")
        self._keys[name] = wanted
        return spark_name(name)
