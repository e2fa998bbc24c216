"""What the initial load asks the source (SQLAlchemy, and psycopg for PostgreSQL's
replication protocol): the stream's start, row estimates, how to split each table.

PostgreSQL: the load creates the connector's replication slot itself, on a replication
connection, exporting the snapshot the slot starts from (``CREATE_REPLICATION_SLOT ...
(SNAPSHOT 'export')``). Every JDBC read imports that snapshot, so the rows loaded are the
state exactly at the slot's start, and the connector, registered after the load, streams
every change from there (Debezium uses an existing slot from its confirmed position). The
snapshot stays importable while the replication connection is open and idle.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from cdcmirror import dialects
from cdcmirror.exceptions import SourceError

_PG = dialects.of("postgresql")
_MYSQL = dialects.of("mysql")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExportedSnapshot:
    slot: str
    lsn: int  # the slot's consistent point, where the stream starts
    name: str  # the snapshot to import: SET TRANSACTION SNAPSHOT '<name>'
    taken_us: int  # when, epoch microseconds
    xids: str = ""  # pg_current_snapshot(): which transactions it sees (no slot only)


def lsn_number(text: str) -> int:
    """``'0/1F83EF0'`` as the number Debezium's positions use.

    >>> lsn_number("1/0000000A")
    4294967306
    """
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def _pg_connect(url: Any, what: str, **extra: Any) -> Any:
    """A psycopg connection (autocommit) to the source at ``url``, its SQLAlchemy URL."""
    import psycopg

    try:
        return psycopg.connect(
            host=url.host or "127.0.0.1",
            port=url.port or 5432,
            user=url.username,
            password=url.password or None,
            dbname=url.database,
            autocommit=True,
            connect_timeout=10,
            **extra,
        )
    except psycopg.Error as exc:
        raise SourceError(f"cannot open {what} to the source: {exc}") from None


@contextmanager
def exported_slot(url: Any, slot: str) -> Iterator[ExportedSnapshot]:
    """Create the logical replication slot ``slot`` (pgoutput) and hold its exported
    snapshot until the block ends. ``url``: the source's SQLAlchemy URL."""
    conn = _pg_connect(url, "a replication connection", replication="database")
    try:
        command = f"CREATE_REPLICATION_SLOT {_PG.quote(slot)} LOGICAL pgoutput "
        result = conn.pgconn.exec_((command + "(SNAPSHOT 'export')").encode())
        if result.ntuples != 1:
            message = (result.error_message or b"").decode(errors="replace").strip()
            raise SourceError(
                f"cannot create replication slot {slot}: {message}; the source user needs "
                "the REPLICATION attribute (sql/postgresql/replication_user.sql)"
            )
        values = [(result.get_value(0, i) or b"").decode() for i in range(result.nfields)]
        yield ExportedSnapshot(slot, lsn_number(values[1]), values[2], int(time.time() * 1e6))
    finally:
        conn.close()


@contextmanager
def exported_snapshot(url: Any) -> Iterator[ExportedSnapshot]:
    """Hold a read-only repeatable-read transaction and its exported snapshot until the
    block ends (no slot: the re-load of ``repair``). ``lsn``: the WAL's insert position read
    after the snapshot was taken, so every change it sees was written before it."""

    conn = _pg_connect(url, "a connection")
    try:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        row = conn.execute(
            "SELECT pg_export_snapshot(), pg_current_snapshot()::text, "
            "pg_current_wal_insert_lsn()::text"
        ).fetchone()
        assert row is not None
        yield ExportedSnapshot(
            "", lsn_number(str(row[2])), str(row[0]), int(time.time() * 1e6), str(row[1])
        )
    finally:
        conn.close()


# the table and, when it is partitioned, its partitions (pg_partition_tree lists nothing for
# a table that is not partitioned)
_TREE = (
    "(c.oid = CAST(:rel AS regclass) "
    "OR c.oid IN (SELECT relid FROM pg_partition_tree(CAST(:rel AS regclass))))"
)


# rows per table from the statistics: PostgreSQL's by the quoted table (``rel``), MySQL's by
# schema and name
_ESTIMATED_ROWS = {
    "postgresql": (
        f"SELECT coalesce(sum(GREATEST(c.reltuples, 0)), 0) FROM pg_class c WHERE {_TREE}"
    ),
    "mysql": (
        "SELECT coalesce(TABLE_ROWS, 0) FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = :s AND TABLE_NAME = :t"
    ),
}


def estimated_rows(engine: Any, dialect: str, tables: Sequence[str]) -> dict[str, int]:
    """Rows per table from the catalog's statistics (no scan); 0 when unknown."""
    from sqlalchemy import text

    out = {t: 0 for t in tables}
    sql = _ESTIMATED_ROWS[dialect]
    with engine.connect() as conn:
        for qualified in tables:
            schema, _, name = qualified.partition(".")
            rel = dialects.of(dialect).table_sql(qualified)
            row = conn.execute(text(sql), {"rel": rel, "s": schema, "t": name}).first()
            out[qualified] = int(row[0]) if row and row[0] is not None else 0
    return out


def pg_pages(engine: Any, qualified: str) -> int:
    """The blocks of the table's biggest partition (the table itself when not partitioned):
    the range its block-range reads cut."""
    from sqlalchemy import text

    sql = (
        "SELECT coalesce(max(pg_relation_size(c.oid)), 0) "
        f"/ current_setting('block_size')::bigint FROM pg_class c WHERE {_TREE}"
    )
    with engine.connect() as conn:
        row = conn.execute(text(sql), {"rel": _PG.table_sql(qualified)}).first()
    return int(row[0]) if row else 0


def mysql_bounds(engine: Any, qualified: str, column: str) -> tuple[int | None, int | None]:
    """Minimum and maximum of an integer key column."""
    from sqlalchemy import text

    c = _MYSQL.quote(column)
    sql = f"SELECT MIN({c}), MAX({c}) FROM {_MYSQL.table_sql(qualified)}"
    with engine.connect() as conn:
        row = conn.execute(text(sql)).first()
    if row is None or row[0] is None:
        return None, None
    return int(row[0]), int(row[1])


def mysql_split_points(engine: Any, qualified: str, column: str, every: int) -> list[str]:
    """Every ``every``-th value of the key column in the source's own order, as SQL
    literals (one pass over the key's index)."""
    from sqlalchemy import text

    c = _MYSQL.quote(column)
    sql = (
        f"SELECT v FROM (SELECT {c} AS v, ROW_NUMBER() OVER (ORDER BY {c}) AS r "
        f"FROM {_MYSQL.table_sql(qualified)}) s WHERE MOD(r, :every) = 0 ORDER BY r"
    )
    with engine.connect() as conn:
        values = [r[0] for r in conn.execute(text(sql), {"every": max(1, every)})]
    return [_literal(v) for v in values if v is not None]


def _literal(value: Any) -> str:
    """A MySQL literal of a key value; text goes as hex with its character set, so no
    quoting or escaping mode matters, and compares in the column's collation."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, datetime | date):
        return f"'{value.isoformat(sep=' ') if isinstance(value, datetime) else value}'"
    return f"_utf8mb4 X'{str(value).encode().hex()}'"


def binlog_position(engine: Any) -> tuple[str, int, int]:
    """The server's current binlog file and offset, and its clock read just after them
    (epoch milliseconds): every change before the offset committed by then."""
    from sqlalchemy import text

    with engine.connect() as conn:
        row = conn.execute(text("SHOW MASTER STATUS")).first()
        clock = conn.execute(text("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")).scalar()
    if row is None:
        raise SourceError(
            "the source has no binary log (SHOW MASTER STATUS is empty); set log_bin "
            "(scripts/provision-sources.sh shows the settings)"
        )
    return str(row[0]), int(row[1]), int(clock)
