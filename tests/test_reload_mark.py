"""The re-load mark's SQL (``mirror/reload_mark.py``), evaluated: which changes a re-load's
snapshot holds, across the wrap-around of 32-bit transaction ids."""

from __future__ import annotations

import sqlite3

import pytest

from cdcmirror.mirror.reload_mark import BinlogReloadMark, ReloadMark, from_snapshot, in_reload_sql

# SQLite evaluates the expression with 64-bit integers, & and IN as Spark does
_DB = sqlite3.connect(":memory:")


def _in(mark: ReloadMark, txid: int | None, lsn: int) -> bool:
    sql = in_reload_sql(mark, "?", str(lsn)).replace("?", "NULL" if txid is None else str(txid))
    return bool(_DB.execute(f"SELECT {sql}").fetchone()[0])


@pytest.mark.parametrize(
    ("txid", "seen"),
    [
        (100, True),
        (749, True),
        (750, True),
        (751, False),
        (752, False),
        (760, False),
        (760 + (1 << 30), False),
    ],
)
def test_visibility_is_the_snapshots(txid: int, seen: bool) -> None:
    """Below xmin seen, in progress not, between xmin and xmax seen, from xmax on not (also
    far ahead)."""
    mark = from_snapshot("750:752:751", 1000)
    assert _in(mark, txid, 10) is seen


def test_ids_across_the_wrap_around() -> None:
    """xmin near 2^32, xmax past the wrap: ids on both sides compare in PostgreSQL's order."""
    top = (1 << 32) - 2
    mark = from_snapshot(f"{(1 << 32) + top}:{(2 << 32) + 3}:{(2 << 32) + 1}", 1000)
    assert (mark.xmin, mark.xmax, mark.xip) == (top, 3, (1,))
    assert _in(mark, top - 5, 10)  # older than xmin
    assert _in(mark, top + 1, 10)  # between, not in progress
    assert _in(mark, 0, 10) and _in(mark, 2, 10)  # past the wrap, below xmax
    assert not _in(mark, 1, 10)  # in progress
    assert not _in(mark, 3, 10) and not _in(mark, 4, 10)  # from xmax on


def test_changes_at_or_after_the_lsn_and_without_a_transaction_are_never_dropped() -> None:
    mark = from_snapshot("750:752:", 1000)
    assert _in(mark, 700, 999)
    assert not _in(mark, 700, 1000)
    assert not _in(mark, None, 10)


def test_mark_text_round_trip() -> None:
    from cdcmirror.mirror.reload_mark import parse_mark

    mark = from_snapshot("750:760:751,755", 1234)
    assert parse_mark(mark.text()) == mark


def _binlog_in(mark: BinlogReloadMark, file: int, pos: int, ts_ms: int) -> bool:
    sql = mark.sql("p", [str(file), str(pos), "0"]).replace("p.source.ts_ms", str(ts_ms))
    return bool(_DB.execute(f"SELECT {sql}").fetchone()[0])


@pytest.mark.parametrize(
    ("file", "pos", "ts_ms", "held"),
    [
        pytest.param(3, 899, 4_000, True, id="just-before-the-offset"),
        pytest.param(2, 10_000, 1_000, True, id="an-earlier-binlog-file"),
        pytest.param(3, 900, 4_000, False, id="at-the-offset"),
        pytest.param(3, 901, 5_000, False, id="after-the-offset"),
        pytest.param(4, 1, 5_000, False, id="a-later-binlog-file"),
        pytest.param(1, 4, 6_000, False, id="a-restarted-history-committed-later"),
    ],
)
def test_a_binlog_mark_holds_what_committed_before_the_reads(
    file: int, pos: int, ts_ms: int, held: bool
) -> None:
    """MySQL/MariaDB: a change before the binlog offset read before the re-load, committed
    by the source's clock then, is the re-load's (dropped); one at or after it is applied;
    one below it by position but committed later comes from a restarted history."""
    mark = BinlogReloadMark(3, 900, 5_000)
    assert _binlog_in(mark, file, pos, ts_ms) is held
