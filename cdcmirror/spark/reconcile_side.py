"""Mirror-side reads for reconcile (Spark): live row counts, the newest position applied,
bucketed row checksums and the rows of chosen buckets, computed like the source side."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from cdcmirror.mirror import history as rules
from cdcmirror.mirror.envelope import q, spark_name
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.reconcile.canonical import RowShape, joined
from cdcmirror.reconcile.compare import BucketSums, HistoryCheck, KeyRows
from cdcmirror.spark.rows import one_row
from cdcmirror.spark.tombstones import TombstoneTables
from cdcmirror.sql_text import sql_string

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LIVE = "NOT coalesce(_cdc_deleted, false)"  # soft-deleted rows are not in the source


def aware(ts: datetime | None) -> datetime | None:
    """A timestamp read back from Spark, as an aware UTC time: PySpark hands TIMESTAMP values
    over as naive datetimes in the Python process's local time zone.

    >>> aware(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)).isoformat()
    '2026-01-02T03:04:05+00:00'
    """
    if ts is None:
        return None
    return ts.astimezone(UTC)  # naive: taken as local time, which is what PySpark gave


class MirrorTables:
    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def _fresh(self, identifier: str) -> str:
        """The table name, after dropping Spark's cached view of it (the mirror commits
        from another process)."""
        name = spark_name(identifier)
        self.spark.sql(f"REFRESH TABLE {name}")
        return name

    def facts(self, identifier: str) -> tuple[int, list[int] | None, datetime | None]:
        """(live rows, newest _cdc_position, newest _cdc_source_ts)."""
        row = one_row(
            self.spark.sql(
                f"SELECT count_if({LIVE}) AS n, max(_cdc_position) AS pos, "
                f"max(_cdc_source_ts) AS ts FROM {self._fresh(identifier)}"
            )
        )
        position = [int(x) for x in row.pos] if row.pos is not None else None
        return int(row.n), position, aware(row.ts)

    def history(self, table: MirrorTable, deep: bool) -> HistoryCheck:
        """``table``'s history table against it (``mirror/history.py``)."""
        assert table.history is not None
        name = self._fresh(table.history)
        current = one_row(self.spark.sql(rules.current_count_sql(name))).n
        check = HistoryCheck(table.history, int(current))
        if deep:
            mirror = spark_name(table.identifier)
            sql = rules.current_differs_sql(table, name, mirror)
            check.differing = int(one_row(self.spark.sql(sql)).n)
            check.broken = int(one_row(self.spark.sql(rules.chain_problems_sql(table, name))).n)
        return check

    def bucket_sums(self, identifier: str, shape: RowShape, buckets: int) -> BucketSums:
        rows = self.spark.sql(
            f"SELECT b, count(*) AS n, sum(h) AS s FROM (SELECT "
            f"{shape.bucket_sql('spark', buckets)} AS b, {shape.row_hash_sql('spark')} AS h "
            f"FROM {self._fresh(identifier)} WHERE {LIVE}) GROUP BY b"
        ).collect()
        return {int(r.b): (int(r.n), int(r.s)) for r in rows}

    def key_rows(self, identifier: str, shape: RowShape, buckets: int, which: list[int]) -> KeyRows:
        if not which:
            return {}
        parts = [joined("spark", [c]) for c in shape.key or shape.columns]
        rows = self.spark.sql(
            f"SELECT * FROM (SELECT {shape.bucket_sql('spark', buckets)} AS b, "
            f"{shape.key_text_sql('spark')} AS k, {shape.row_hash_sql('spark')} AS h, "
            + ", ".join(f"{p} AS p{i}" for i, p in enumerate(parts))
            + f" FROM {self._fresh(identifier)} WHERE {LIVE}) "
            f"WHERE b IN ({', '.join(map(str, which))})"
        ).collect()
        return {str(r[1]): (tuple(str(v) for v in r[3:]), int(r[2])) for r in rows}

    def positions(self, identifier: str, shape: RowShape, condition: str) -> dict[str, list[int]]:
        """Key text -> stored ``_cdc_position`` of the live rows matching ``condition``."""
        rows = self.spark.sql(
            f"SELECT {shape.key_text_sql('spark')} AS k, _cdc_position AS pos "
            f"FROM {self._fresh(identifier)} WHERE {LIVE} AND ({condition})"
        ).collect()
        return {str(r.k): [int(x) for x in r.pos or []] for r in rows}

    def delete_unchanged(
        self,
        table: MirrorTable,
        shape: RowShape,
        rows: dict[str, list[int]],
        soft: bool,
        tombstones: TombstoneTables,
        missing_since: tuple[list[int], int],
    ) -> None:
        """Delete the rows of these keys as a delete the mirror applies would, each only
        while it still has the position read before (a change the mirror applied in between
        wins): soft deletes keep the row, marked deleted; hard deletes remove it after
        recording its key and position as a tombstone, so that an older change of the key
        read again later (a replay, a lost checkpoint) is not written back. The row's own
        position is the newest the mirror knows of the key, and a delete the source makes
        later is newer still. The table's history first ends each key's current version
        that starts at or before that position, deleted, at ``missing_since`` (a source
        position and its time in epoch microseconds, read before the source was found
        without the key): a crash between the two leaves the row, which the repair run
        again removes."""
        if not rows:
            return
        target = self._fresh(table.identifier)
        key = shape.key_text_sql("spark")
        if table.history:
            end, end_us = missing_since
            history = self._fresh(table.history)
            self.spark.sql(rules.removed_sql(table, history, key, rows, end, end_us))
        # the position compared as text: Iceberg cannot turn an array literal inside an OR
        # into a filter and refuses the statement
        cases = " OR ".join(
            f"({key} = {sql_string(k)} AND to_json(_cdc_position) = "
            f"'[{','.join(str(int(p)) for p in pos)}]')"
            for k, pos in rows.items()
        )
        if soft:
            self.spark.sql(f"UPDATE {target} SET _cdc_deleted = true, _cdc_op = 'd' WHERE {cases}")
            return
        # the tombstones first: after a crash between the two the row is still there and
        # the repair runs again (a tombstone recorded twice is harmless)
        graves = tombstones.ensure(self.spark, table)
        keys = ", ".join(q(k) for k in table.key)
        self.spark.sql(
            f"INSERT INTO {graves} ({keys}, _cdc_position, _cdc_source_ts) "
            f"SELECT {keys}, _cdc_position, _cdc_source_ts FROM {target} WHERE {cases}"
        )
        self.spark.sql(f"DELETE FROM {target} WHERE {cases}")
