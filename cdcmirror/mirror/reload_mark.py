"""The mark a re-load (``repair --method reload``) leaves on its table: which changes its
rows hold already, so that the mirror drops them instead of applying them again. Pure.

Applied again on the re-loaded rows, such a change is harmless only while it is the newest
of its key: a change older than the key's newest (a replay after a lost checkpoint, Debezium's
at-least-once restart, a dead letter replayed) would write the key back to an older state,
and a TRUNCATE the mirror applied before the re-load, read again, would empty the re-loaded
table; the re-loaded rows carry a snapshot-phase position, older than any streamed change.

PostgreSQL (:class:`ReloadMark`): the re-load reads one exported snapshot. Which
transactions it sees is exactly its snapshot's visibility: a transaction id below ``xmin`` is
seen, one at or above ``xmax`` is not, one in between is seen unless it was in progress
(``xip``). Debezium names each change's transaction (``source.txId``), so a change the rows
hold is known exactly, whatever the order of commits in the WAL (which PostgreSQL does not
promise to be the order of visibility). Applied again on the re-loaded rows, even the newest
change of a key would be harmless but for an unchanged TOAST value it carries: its
placeholder may point at a row the re-load no longer has (an old key). So the mirror drops
these changes (their position's phase is ``IN_RELOAD``).

Every change the snapshot sees was written before ``lsn`` (the WAL's insert position read
after the snapshot was taken), so only changes before ``lsn`` are compared: transaction ids
wrap around, and later changes are never the re-load's.

MySQL/MariaDB (:class:`BinlogReloadMark`): the re-load reads key ranges, each in its own
statement, after reading the binlog's end (``SHOW MASTER STATUS``). A transaction reaches the
binlog when it commits, so every change before that position committed before the first read
began, and each range's read sees it: the rows hold it. Changes from that position on may or
may not be in the rows (the ranges are read one after another); they are applied as usual,
newer than the rows' snapshot phase, in source order per key, so each key ends at its newest.
A change of a restarted source history (``RESET MASTER``) can lie below the mark by position:
the mark also holds the source's clock when it was read, and a change committed after it is
never the re-load's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

IN_RELOAD = -1  # the phase of a change the re-loaded rows hold (dropped, never applied)
_XID = 1 << 32


@dataclass(frozen=True)
class ReloadMark:
    """PostgreSQL: the re-load's exported snapshot."""

    xmin: int  # 32-bit transaction ids, as Debezium's source.txId has them
    xmax: int
    xip: tuple[int, ...]
    lsn: int  # the WAL's insert position after the snapshot

    source_fields: ClassVar[str] = "txId BIGINT"  # read from each change's ``source``

    def text(self) -> str:
        return json.dumps(
            {"xmin": self.xmin, "xmax": self.xmax, "xip": list(self.xip), "lsn": self.lsn},
            sort_keys=True,
        )

    def sql(self, p: str, order: list[str]) -> str:
        """SQL: the change of payload ``p`` (``order``: its source order, the dialect's
        ``source_order_sql``) is one the re-loaded rows hold."""
        return in_reload_sql(self, f"{p}.source.txId", order[-1])


@dataclass(frozen=True)
class BinlogReloadMark:
    """MySQL/MariaDB: the binlog's end and the source's clock before the re-load's reads."""

    file_index: int  # the binlog file's number
    pos: int  # the offset in it
    ts_ms: int  # the source's clock, epoch milliseconds

    source_fields: ClassVar[str] = ""  # ``ts_ms`` is read already

    def text(self) -> str:
        return json.dumps(
            {"binlog": [self.file_index, self.pos], "ts_ms": self.ts_ms}, sort_keys=True
        )

    def sql(self, p: str, order: list[str]) -> str:
        """SQL: the change of payload ``p`` (``order``: the binlog file index, offset and row,
        ``dialects.mysql``) committed before the re-load read anything.

        >>> BinlogReloadMark(3, 900, 5000).sql("p", ["f", "o", "r"])
        '(p.source.ts_ms <= 5000 AND (f < 3 OR (f = 3 AND o < 900)))'
        """
        file, pos = order[0], order[1]
        before = (
            f"({file} < {self.file_index} OR ({file} = {self.file_index} AND {pos} < {self.pos}))"
        )
        return f"({p}.source.ts_ms <= {self.ts_ms} AND {before})"


Mark = ReloadMark | BinlogReloadMark


def from_snapshot(snapshot: str, lsn: int) -> ReloadMark:
    """The mark of ``pg_current_snapshot()``'s text (64-bit ids: ``xmin:xmax:xip,...``).

    >>> from_snapshot("4294967301:4294967310:4294967303,4294967305", 99)
    ReloadMark(xmin=5, xmax=14, xip=(7, 9), lsn=99)
    >>> from_snapshot("750:750:", 7).xip
    ()
    """
    xmin, xmax, xip = snapshot.strip().split(":")
    ids = tuple(int(x) % _XID for x in xip.split(",") if x)
    return ReloadMark(int(xmin) % _XID, int(xmax) % _XID, ids, lsn)


def parse_mark(text: str | None) -> Mark | None:
    """The mark in a table property; None when there is none.

    >>> parse_mark(ReloadMark(5, 9, (6,), 100).text())
    ReloadMark(xmin=5, xmax=9, xip=(6,), lsn=100)
    >>> parse_mark(BinlogReloadMark(2, 77, 9).text())
    BinlogReloadMark(file_index=2, pos=77, ts_ms=9)
    >>> parse_mark(None) is None
    True
    """
    if not text:
        return None
    data = json.loads(text)
    if "binlog" in data:
        file_index, pos = data["binlog"]
        return BinlogReloadMark(int(file_index), int(pos), int(data["ts_ms"]))
    return ReloadMark(
        int(data["xmin"]), int(data["xmax"]), tuple(int(x) for x in data["xip"]), int(data["lsn"])
    )


def _precedes(a: str, b: int) -> str:
    """SQL: transaction id ``a`` is older than ``b`` (PostgreSQL's modulo-2^32 order)."""
    return f"((({a}) - {int(b)}) & {_XID - 1}) >= {_XID >> 1}"


def in_reload_sql(mark: ReloadMark, txid: str, lsn: str) -> str:
    """SQL: the change of transaction ``txid`` at WAL position ``lsn`` is in the re-load.

    >>> in_reload_sql(ReloadMark(5, 9, (6,), 100), "t", "l")[:44]
    '(t IS NOT NULL AND l < 100 AND (((((t & 4294'
    """
    t = f"({txid} & {_XID - 1})"
    seen_between = f"({_precedes(t, mark.xmax)}"
    if mark.xip:
        seen_between += f" AND NOT {t} IN ({', '.join(str(x) for x in mark.xip)})"
    seen_between += ")"
    return (
        f"({txid} IS NOT NULL AND {lsn} < {int(mark.lsn)} AND "
        f"({_precedes(t, mark.xmin)} OR {seen_between}))"
    )
