"""Source-side reads for reconcile: row counts, the current log position, bucketed row
checksums and the rows of chosen buckets (SQLAlchemy)."""

from __future__ import annotations

from typing import Any

from cdcmirror import dialects
from cdcmirror.exceptions import SourceError
from cdcmirror.reconcile.canonical import RowShape, joined
from cdcmirror.reconcile.compare import BucketSums, KeyRows


def _table(dialect: str, qualified: str) -> str:
    return dialects.of(dialect).table_sql(qualified)


class SourceReader:
    """One connection to the source, read-only."""

    def __init__(self, engine: Any, dialect: str) -> None:
        self.engine = engine
        self.dialect = dialect

    def _rows(self, sql: str) -> list[Any]:
        from sqlalchemy import text
        from sqlalchemy.exc import DBAPIError

        try:
            with self.engine.connect() as conn:
                # the canonical text of date-times is in UTC
                conn.execute(text(dialects.of(self.dialect).session_init))
                return list(conn.execute(text(sql)))
        except DBAPIError as exc:
            detail = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
            raise SourceError(f"reading the source failed: {detail}") from None

    def count(self, qualified: str) -> int:
        return int(self._rows(f"SELECT count(*) FROM {_table(self.dialect, qualified)}")[0][0])

    def position(self) -> str:
        """The source's current log position, for the report."""
        d = dialects.of(self.dialect)
        return d.position_text(self._rows(d.current_position_sql))

    def log_position(self) -> tuple[tuple[int, ...], int]:
        """The source's log position now, as the initial load takes one (PostgreSQL: the
        WAL's LSN; MySQL/MariaDB: binlog file number and offset), and the source's clock
        read after it (epoch microseconds): every transaction that commits later is after
        both."""
        from cdcmirror.mirror.positions import binlog_file_index
        from cdcmirror.source.load_reads import binlog_position, lsn_number

        if dialects.of(self.dialect).slot:
            (lsn, us), *_ = self._rows(
                "SELECT pg_current_wal_insert_lsn()::text, "
                "CAST(extract(epoch FROM clock_timestamp()) * 1000000 AS BIGINT)"
            )
            return (lsn_number(str(lsn)),), int(us)
        file, offset, clock_ms = binlog_position(self.engine)
        return (binlog_file_index(file), offset), clock_ms * 1000

    def bucket_sums(self, qualified: str, shape: RowShape, buckets: int) -> BucketSums:
        d = self.dialect
        sql = (
            f"SELECT b, count(*), sum(h) FROM (SELECT {shape.bucket_sql(d, buckets)} AS b, "
            f"{shape.row_hash_sql(d)} AS h FROM {_table(d, qualified)}) x GROUP BY b"
        )
        return {int(b): (int(n), int(s)) for b, n, s in self._rows(sql)}

    def key_rows(self, qualified: str, shape: RowShape, buckets: int, which: list[int]) -> KeyRows:
        """Key text -> (key values, row hash) of the rows in the listed buckets."""
        if not which:
            return {}
        d = self.dialect
        parts = ", ".join(joined(d, [c]) for c in shape.key or shape.columns)
        sql = (
            f"SELECT * FROM (SELECT {shape.bucket_sql(d, buckets)} AS b, "
            f"{shape.key_text_sql(d)} AS k, {shape.row_hash_sql(d)} AS h, {parts} "
            f"FROM {_table(d, qualified)}) x WHERE b IN ({', '.join(map(str, which))})"
        )
        return {str(r[1]): (tuple(str(v) for v in r[3:]), int(r[2])) for r in self._rows(sql)}

    def present_keys(self, qualified: str, shape: RowShape, condition: str) -> set[str]:
        """Key texts of the rows matching ``condition`` (a filter from repair.plan)."""
        d = self.dialect
        sql = f"SELECT {shape.key_text_sql(d)} FROM {_table(d, qualified)} WHERE {condition}"
        return {str(r[0]) for r in self._rows(sql)}
