"""The mark a PostgreSQL re-load (``repair --method reload``) leaves on its table: which
changes its rows hold already, so that the mirror drops them instead of applying them again.
Pure.

The re-load reads one exported snapshot. Which transactions it sees is exactly its snapshot's
visibility: a transaction id below ``xmin`` is seen, one at or above ``xmax`` is not, one in
between is seen unless it was in progress (``xip``). Debezium names each change's transaction
(``source.txId``), so a change the rows hold is known exactly, whatever the order of commits
in the WAL (which PostgreSQL does not promise to be the order of visibility). Applied again on
the re-loaded rows, such a change would be harmless but for an unchanged TOAST value it
carries: its placeholder may point at a row the re-load no longer has (an old key). So the
mirror drops these changes (their position's phase is ``IN_RELOAD``).

Every change the snapshot sees was written before ``lsn`` (the WAL's insert position read
after the snapshot was taken), so only changes before ``lsn`` are compared: transaction ids
wrap around, and later changes are never the re-load's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

IN_RELOAD = -1  # the phase of a change the re-loaded rows hold (dropped, never applied)
_XID = 1 << 32


@dataclass(frozen=True)
class ReloadMark:
    xmin: int  # 32-bit transaction ids, as Debezium's source.txId has them
    xmax: int
    xip: tuple[int, ...]
    lsn: int  # the WAL's insert position after the snapshot

    def text(self) -> str:
        return json.dumps(
            {"xmin": self.xmin, "xmax": self.xmax, "xip": list(self.xip), "lsn": self.lsn},
            sort_keys=True,
        )


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


def parse_mark(text: str | None) -> ReloadMark | None:
    """The mark in a table property; None when there is none.

    >>> parse_mark(ReloadMark(5, 9, (6,), 100).text())
    ReloadMark(xmin=5, xmax=9, xip=(6,), lsn=100)
    >>> parse_mark(None) is None
    True
    """
    if not text:
        return None
    data = json.loads(text)
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
