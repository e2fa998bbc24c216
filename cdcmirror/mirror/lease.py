"""One mirror job per table: a lease in the table's properties. Pure.

A job writes ``cdcmirror.lease`` (owner id, host, process, checkpoint, valid until) on each
table it mirrors when it starts, renews it while it runs and removes it when it stops. A
second job finds a valid lease of another owner and refuses to start, naming the holder.
A lease stops counting when it expires (its job died on another host) or when its process
is gone on this host (a crash: restart at once). Two jobs starting within the same few
milliseconds can both write; the later write wins and the other job stops at its next
renewal. Meanwhile the position guard keeps either job from writing anything wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass

LEASE_SECONDS = 300.0  # a job that died on another host blocks the tables this long at most
RENEW_SECONDS = 60.0


@dataclass(frozen=True)
class Lease:
    owner: str
    host: str
    pid: int
    started: int  # the process's start time (clock ticks since boot), to tell a reused pid
    checkpoint: str
    until: float  # epoch seconds

    def text(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def holder(self) -> str:
        return f"host {self.host}, pid {self.pid}, checkpoint {self.checkpoint}"


def parse_lease(text: str | None) -> Lease | None:
    """The lease in a table property; None when there is none or it cannot be read.

    >>> parse_lease(Lease("a", "h", 1, 2, "c", 3.0).text())
    Lease(owner='a', host='h', pid=1, started=2, checkpoint='c', until=3.0)
    >>> parse_lease("not json") is None
    True
    """
    if not text:
        return None
    try:
        raw = json.loads(text)
        return Lease(
            str(raw["owner"]),
            str(raw["host"]),
            int(raw["pid"]),
            int(raw["started"]),
            str(raw["checkpoint"]),
            float(raw["until"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def blocking(
    table: str, held: Lease | None, me: Lease, now: float, alive: Callable[[Lease], bool]
) -> str | None:
    """Why ``me`` may not mirror ``table`` (its lease is ``held``); None when it may.

    >>> me = Lease("me", "h", 1, 1, "c", 100.0)
    >>> other = Lease("x", "h2", 9, 9, "/ck", 50.0)
    >>> blocking("t", other, me, 10.0, lambda lease: True)[:44]
    't is being mirrored by another cdcmirror job'
    >>> blocking("t", other, me, 60.0, lambda lease: True) is None  # expired
    True
    >>> blocking("t", Lease("x", "h", 9, 9, "/ck", 50.0), me, 10.0, lambda l: False) is None
    True
    """
    if held is None or held.owner == me.owner or held.until < now:
        return None
    if held.host == me.host and not alive(held):
        return None
    return (
        f"{table} is being mirrored by another cdcmirror job ({held.holder()}); two jobs "
        "on one table would race each other. Stop that job first (SIGTERM finishes its "
        f"batch). If it died on another machine, its lease runs out by itself within "
        f"{LEASE_SECONDS:.0f}s"
    )
