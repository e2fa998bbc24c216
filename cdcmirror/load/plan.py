"""What the initial load does with each table: its columns, the query that reads them, the
position and commit time its rows get, and whether Spark or Debezium loads at all. Pure.

Why the result is the source's state, with changes streaming all along: the connector's
stream starts at a position fixed *before* any row is read (PostgreSQL: the replication
slot, whose exported snapshot every read shares; MySQL/MariaDB: the connector's first
committed binlog offset). Every loaded row carries a snapshot-phase position (phase 0,
``mirror/positions.py``), below every streamed change, so the mirror, started after the
load, applies each change committed since the fixed position on top through its usual
position guard: an update or delete made during the load wins over the loaded row, a row
inserted during the load arrives as its insert, and a change the read already saw is
applied again with the same values (MySQL's row images are complete; PostgreSQL's reads
see exactly the state at the slot's start, so none of its changes was seen).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cdcmirror import dialects
from cdcmirror.exceptions import NotLoadableError
from cdcmirror.load import mysql, postgresql
from cdcmirror.load.columns import LoadColumn
from cdcmirror.source_model import SourceColumn
from cdcmirror.table_properties import LOAD_PENDING

_COLUMN_READS = {"postgresql": postgresql, "mysql": mysql}  # each dialect's column reads

SPARK = "spark"
DEBEZIUM = "debezium"
AUTO = "auto"
MODES = (AUTO, SPARK, DEBEZIUM)
# table property: "pending" until the table's rows are loaded, then the load's summary
PENDING = LOAD_PENDING
SUMMARY_PROPERTY = "cdcmirror.initial-load"  # snapshot summary of the load's commit


@dataclass(frozen=True)
class TableLoad:
    identifier: str  # the Iceberg table
    source: str  # schema.table
    dialect: str
    key: tuple[str, ...]
    columns: tuple[LoadColumn, ...]
    key_types: tuple[tuple[str, str], ...] = ()  # (key column, source type name)

    def query(self, where: str) -> str:
        """The JDBC ``dbtable`` of one partition: a subquery reading every column of the
        rows ``where`` selects (a condition on the table's own columns, or ``ctid``)."""
        selects = ", ".join(c.select for c in self.columns)
        source = dialects.of(self.dialect).table_sql(self.source)
        return f"(SELECT {selects} FROM {source} WHERE {where}) s"


def check_keyed(dialect: str, qualified: str, key: Sequence[str]) -> None:
    """Refuse a table without a key where the load's reads come after the stream's start
    (MySQL/MariaDB, ``dialects``' ``slot`` false): a row inserted between the start and its
    read would be both read and streamed, and a table without a key cannot tell the two
    apart, so it would be appended twice. PostgreSQL's reads see the slot's start itself.

    >>> check_keyed("postgresql", "s.log", ())
    >>> check_keyed("mysql", "s.log", ("id",))
    >>> try:
    ...     check_keyed("mysql", "s.log", ())
    ... except NotLoadableError as exc:
    ...     print(str(exc)[:60])
    s.log has no key, so it cannot be loaded with initial_load =
    """
    if key or dialects.of(dialect).slot:
        return
    raise NotLoadableError(
        f'{qualified} has no key, so it cannot be loaded with initial_load = "spark" (its '
        "reads come after the stream's start: a row inserted meanwhile would be appended "
        'twice); set [bootstrap] initial_load = "debezium", give it a primary key, or leave '
        "the table out"
    )


def load_columns(
    dialect: str,
    qualified: str,
    columns: Sequence[SourceColumn],
    mapped: Sequence[tuple[str, str]],
) -> tuple[LoadColumn, ...]:
    """Each column's reading; ``mapped`` is (Iceberg type, carrier) per column. Raises
    ``NotLoadableError`` for a column the load cannot produce exactly.

    >>> from cdcmirror.source_model import SourceType
    >>> cols = [SourceColumn("id", SourceType("bigint", "bigint"))]
    >>> load_columns("postgresql", "s.t", cols, [("long", "int64")])[0].select
    '"id"::bigint AS c0'
    """
    reader = _COLUMN_READS[dialect]
    return tuple(
        reader.load_column(f"{qualified}.{c.name}", c.name, f"c{i}", c.type, iceberg, carrier)
        for i, (c, (iceberg, carrier)) in enumerate(zip(columns, mapped, strict=True))
    )


def choose(mode: str, estimated_rows: int, min_rows: int) -> str:
    """Spark or Debezium: ``auto`` takes Spark when the tables hold ``min_rows`` or more.

    >>> choose("auto", 5_000_000, 200_000), choose("auto", 10, 200_000)
    ('spark', 'debezium')
    >>> choose("debezium", 10**9, 1)
    'debezium'
    """
    if mode == AUTO:
        return SPARK if estimated_rows >= min_rows else DEBEZIUM
    return mode


@dataclass(frozen=True)
class LoadChoice:
    """How bootstrap chose between Spark and Debezium for a new connector's rows, and on
    what: the estimate ``auto`` compared with ``min_rows`` and where it came from."""

    mode: str  # spark, debezium, or existing (the connector was registered already)
    asked: str  # auto, spark or debezium
    estimated_rows: int
    min_rows: int
    estimates: tuple[tuple[str, int], ...] = ()  # (source table, estimated rows)
    estimate: str = ""  # where the estimates come from (``dialects``' ``row_estimate``)
    why: str = ""  # why auto did not take Spark although the tables are big enough

    @property
    def near_threshold(self) -> bool:
        """``auto`` chose on an estimate within a factor of two of ``min_rows``: another
        estimate (InnoDB's change between runs) may choose the other way.

        >>> LoadChoice("debezium", "auto", 150, 200).near_threshold
        True
        >>> LoadChoice("debezium", "debezium", 150, 200).near_threshold
        False
        """
        return self.asked == AUTO and self.min_rows / 2 <= self.estimated_rows <= self.min_rows * 2

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "asked": self.asked,
            "estimated_rows": self.estimated_rows,
            "min_rows": self.min_rows,
            "estimate": self.estimate,
            "estimates": dict(self.estimates),
            "near_threshold": self.near_threshold,
            "why": self.why or None,
        }

    def describe(self) -> str:
        if self.mode == "existing":
            return "initial load: none (the connector is registered already)"
        line = f"initial load: {self.mode} ({self.estimated_rows:,} rows estimated{self.why})"
        if self.near_threshold:
            line += (
                f"; near initial_load_min_rows = {self.min_rows:,}, where another estimate "
                f"({self.estimate}) may choose otherwise: set [bootstrap] initial_load to fix it"
            )
        return line


def snapshot_mode(load: str) -> dict[str, str]:
    """The connector settings for a load by ``load``: Debezium streams only when Spark
    loads the rows (``no_data``), and MySQL/MariaDB commit an offset soon without changes
    (heartbeats), which is how the load learns that the stream's start is fixed.

    >>> snapshot_mode("spark")["snapshot.mode"], snapshot_mode("debezium")
    ('no_data', {})
    """
    if load != SPARK:
        return {}
    return {"snapshot.mode": "no_data", "heartbeat.interval.ms": "2000"}


def summary(
    position: Sequence[int], source_ts_us: int, rows: int, through: Sequence[int] | None = None
) -> str:
    """The load's record in the table's snapshot summary and properties; ``through``: the
    source position (streamed phase, its source part) its reads ended at (``read_through``).

    >>> summary([0, 5, 5, -1, -1], 7, 3)
    '{"position": [0, 5, 5, -1, -1], "rows": 3, "source_ts_us": 7}'
    >>> summary([0, 5, 5, -1, -1], 7, 3, [1, 9, 9])
    '{"position": [0, 5, 5, -1, -1], "rows": 3, "source_ts_us": 7, "through": [1, 9, 9]}'
    """
    record: dict[str, Any] = {
        "position": list(position),
        "rows": rows,
        "source_ts_us": source_ts_us,
    }
    if through is not None:
        record["through"] = list(through)
    return json.dumps(record, sort_keys=True)


def read_through(text: str | None) -> tuple[int, ...] | None:
    """Where the reads of the load ``text`` records (``summary``) ended, as a source position
    of the streamed phase: every change its rows may hold lies before it. Only from there on
    is the loaded table a state of the source; before it, the rows can hold changes read a
    while after the stream's start (MySQL/MariaDB read one key range after another), so the
    consistent tag waits for a point at or past it (``consistent_point.py``). None: not
    known (a load before cdcmirror recorded it, or none).

    >>> read_through('{"position": [0, 5, 5], "rows": 3, "source_ts_us": 7, "through": [1, 9, 9]}')
    (1, 9, 9)
    >>> read_through('{"position": [0, 5, 5], "rows": 3, "source_ts_us": 7}'), read_through(None)
    (None, None)
    >>> read_through(LOAD_PENDING)
    """
    if not text or text == LOAD_PENDING:
        return None
    try:
        through = json.loads(text).get("through")
    except (ValueError, AttributeError):
        return None
    return tuple(int(x) for x in through) if through else None
