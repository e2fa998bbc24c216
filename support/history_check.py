"""What a history table (``mirror.history``) must hold, checked from outside: each key's
versions chained by position, the current ones equal to the mirrored table, and the table
"as of" a recorded moment of the source equal to the source's rows at that moment."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from support import services
from support.mirror_env import Source, canonical


@dataclass(frozen=True)
class Moment:
    """A moment of the source between two transactions: what its position was (PostgreSQL:
    the WAL's insert LSN; MySQL/MariaDB: the binlog file index and offset) and its rows."""

    position: tuple[int, ...]
    rows: dict[Any, tuple[Any, ...]]


def position_now(src: Source) -> tuple[int, ...]:
    """The source's position now: every change committed before is before it, every change
    after at or past it."""
    if src.dialect == "postgresql":
        with services.pg_connect() as conn:
            row = conn.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()
        assert row is not None
        return (int(row[0]),)
    conn = src.connect()
    try:
        cur = conn.cursor()
        cur.execute("SHOW MASTER STATUS")
        file, offset = cur.fetchone()[:2]
    finally:
        conn.close()
    return (int(str(file).rsplit(".", 1)[-1]), int(offset))


def before_sql(dialect: str, column: str, moment: tuple[int, ...]) -> str:
    """Spark SQL: the change at position ``column`` came before ``moment`` (positions:
    ``[phase, last commit LSN, LSN, ...]`` / ``[phase, file, offset, row, ...]``)."""
    if dialect == "postgresql":
        return f"{column}[2] < {moment[0]}"
    file, offset = moment
    return f"({column}[1] < {file} OR ({column}[1] = {file} AND {column}[2] < {offset}))"


def as_of_rows(
    spark: Any, history: str, columns: list[str], dialect: str, moment: tuple[int, ...]
) -> dict[Any, tuple[Any, ...]]:
    """The rows the history says the table held at ``moment``."""
    exprs = [f"unix_micros(`{c}`) AS `{c}`" if c == "at_tz" else f"`{c}`" for c in columns]
    started = before_sql(dialect, "_cdc_valid_from", moment)
    ended = before_sql(dialect, "_cdc_valid_to", moment)
    rows = spark.sql(
        f"SELECT id, {', '.join(exprs)} FROM {history} "
        f"WHERE {started} AND (_cdc_valid_to IS NULL OR NOT ({ended}))"
    ).collect()
    out: dict[Any, tuple[Any, ...]] = {}
    for r in rows:
        assert r[0] not in out, f"{history}: key {r[0]} has two versions at {moment}"
        out[r[0]] = tuple(canonical(dialect, c, v) for c, v in zip(columns, r[1:], strict=True))
    return out


def versions(spark: Any, history: str) -> list[dict[str, Any]]:
    rows = spark.sql(
        f"SELECT id, _cdc_valid_from, _cdc_valid_to, _cdc_valid_from_ts, _cdc_valid_to_ts, "
        f"_cdc_op, _cdc_is_current, _cdc_deleted FROM {history}"
    ).collect()
    return sorted((r.asDict() for r in rows), key=lambda v: (v["id"], v["_cdc_valid_from"]))


def assert_chains(chain_of_all: list[dict[str, Any]]) -> int:
    """Each key's versions, by start: every one but the last closed where the next starts
    (or, ended by a delete or TRUNCATE, at or before it), the last current exactly when it
    has no end, commit times in the same order. Returns the number of keys."""
    keys = 0
    for key, group in itertools.groupby(chain_of_all, key=lambda v: v["id"]):
        keys += 1
        chain = list(group)
        for a, b in itertools.pairwise(chain):
            assert a["_cdc_valid_from"] != b["_cdc_valid_from"], f"id={key}: a version twice {a}"
            assert not a["_cdc_is_current"] and a["_cdc_valid_to"] is not None, (key, a, b)
            if a["_cdc_deleted"]:
                assert a["_cdc_valid_to"] <= b["_cdc_valid_from"], (key, a, b)
            else:
                assert a["_cdc_valid_to"] == b["_cdc_valid_from"], (key, a, b)
                assert a["_cdc_valid_to_ts"] == b["_cdc_valid_from_ts"], (key, a, b)
        last = chain[-1]
        assert last["_cdc_is_current"] == (last["_cdc_valid_to"] is None), (key, last)
        assert not (last["_cdc_is_current"] and last["_cdc_deleted"]), (key, last)
    return keys
