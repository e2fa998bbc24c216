"""The tombstone tables: per mirrored table with hard deletes, the position and commit time
of every deleted key, so that an older change of that key arriving later (a replay, a
re-snapshot) is not written back (``mirror/merge_sql.py`` classifies against them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from cdcmirror.iceberg_types import spark_type
from cdcmirror.mirror.envelope import q, spark_name
from cdcmirror.mirror.high_water import Mark, recorded
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.tombstone_pruning import PRUNED_BELOW, pruned_mark
from cdcmirror.spark.iceberg import Java, iceberg_table, snapshot_history, snapshot_holds_rows
from cdcmirror.sql_text import as_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class Entombed(NamedTuple):
    """What a batch's classification reads of a tombstone table, from one version of its
    metadata (``mirror/tombstone_pruning.py``)."""

    stored: str | None  # the tombstones to join, as of the snapshot read; None: none held
    pruned_below: list[int] | None  # the mark of the tombstones pruned by age


def entombed(spark: SparkSession, tombstones: str | None) -> Entombed:
    """The tombstone table ``tombstones`` (a Spark name; None: soft deletes) as a batch's
    classification reads it: its current snapshot, pinned, when it holds rows (an empty one
    is not joined: only this job writes it), and the pruned mark of the same metadata."""
    if tombstones is None:
        return Entombed(None, None)
    table = iceberg_table(spark, tombstones)
    mark = pruned_of(table)
    snapshot = table.currentSnapshot()
    if not snapshot_holds_rows(snapshot):
        return Entombed(None, mark)
    return Entombed(as_of(tombstones, int(snapshot.snapshotId())), mark)


def tombstone_marks(spark: SparkSession, tombstones: str) -> tuple[Mark, list[int]]:
    """The high-water mark the tombstone table ``tombstones`` (a Spark name) records in its
    snapshots (``high_water.recorded``; None: not known) and its pruned mark (``[]``: none
    pruned), from one load of it."""
    table = iceberg_table(spark, tombstones)
    return recorded(snapshot_history(table)), pruned_of(table) or []


def pruned_of(table: Java) -> list[int] | None:
    """The pruned mark a tombstone table (Java, loaded) holds (None: nothing pruned)."""
    return pruned_mark(table.properties().get(PRUNED_BELOW))


SUFFIX = "__deleted"  # a tombstone table's name: the mirrored table's, then this


def is_tombstone_table(identifier: str, namespace: str) -> bool:
    """Whether ``identifier`` names a tombstone table of the mirror's own ``namespace``.

    >>> is_tombstone_table("app__cdcmirror.items__deleted", "app__cdcmirror")
    True
    >>> is_tombstone_table("app_mirror.items__deleted", "app__cdcmirror")
    False
    """
    space, _, name = identifier.rpartition(".")
    return space == namespace and name.endswith(SUFFIX)


class TombstoneTables:
    """Makes each table once per job (and again when its key was widened)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._keys: dict[str, tuple[str, ...]] = {}  # tombstone table -> key types

    def identifier_of(self, table: str) -> str:
        """The identifier of the tombstone table of the mirrored table ``table``.

        >>> TombstoneTables("app__cdcmirror").identifier_of("app_mirror.items")
        'app__cdcmirror.items__deleted'
        """
        return f"{self.namespace}.{table.split('.')[-1]}{SUFFIX}"

    def made(self) -> list[str]:
        """The Spark names of the tombstone tables this job has made or found."""
        return [spark_name(name) for name in self._keys]

    def ensure(self, spark: SparkSession, table: MirrorTable) -> str:
        """The Spark name of ``table``'s tombstone table, made or widened if needed."""
        name = self.identifier_of(table.identifier)
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
