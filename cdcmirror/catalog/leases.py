"""Read and write the mirror lease property of Iceberg tables (pyiceberg); the rules are in
``mirror/lease.py``."""

from __future__ import annotations

import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from pyiceberg.exceptions import CommitFailedException

from cdcmirror.exceptions import LeaseHeldError
from cdcmirror.mirror.lease import (
    LEASE_SECONDS,
    Lease,
    blocking,
    parse_lease,
)
from cdcmirror.table_properties import LEASE_PROPERTY


def process_started(pid: int) -> int:
    """The process's start time in clock ticks since boot (Linux); 0 when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def alive(lease: Lease) -> bool:
    """Whether the lease's process still runs (same host): the pid exists and, where the
    start time is known, it is the same process, not a reused pid."""
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return lease.started == 0 or process_started(lease.pid) in (0, lease.started)


def my_lease(checkpoint: str) -> Lease:
    pid = os.getpid()
    return Lease(
        f"{uuid.uuid4()}",
        socket.gethostname(),
        pid,
        process_started(pid),
        checkpoint,
        time.time() + LEASE_SECONDS,
    )


def acquire(catalog: Any, identifiers: list[str], me: Lease) -> None:
    """Write ``me`` on every table, or raise naming the job that holds one (nothing is
    taken then). Also the renewal: a table whose lease another job took stops this one."""
    for identifier in identifiers:
        why = blocking(identifier, _read(catalog, identifier), me, time.time(), alive)
        if why:
            raise LeaseHeldError(why)
    for identifier in identifiers:
        _write(catalog, identifier, me.text())
    for identifier in identifiers:  # two jobs starting at once: the later write won
        held = _read(catalog, identifier)
        if held is not None and held.owner != me.owner:
            raise LeaseHeldError(blocking(identifier, held, me, time.time(), alive) or "lease lost")


def release(catalog: Any, identifiers: list[str], me: Lease) -> None:
    for identifier in identifiers:
        held = _read(catalog, identifier)
        if held is not None and held.owner == me.owner:
            _write(catalog, identifier, None)


def _read(catalog: Any, identifier: str) -> Lease | None:
    return parse_lease(catalog.load_table(identifier).properties.get(LEASE_PROPERTY))


def _write(catalog: Any, identifier: str, text: str | None, tries: int = 5) -> None:
    for attempt in range(tries):
        table = catalog.load_table(identifier)
        try:
            with table.transaction() as tx:
                if text is None:
                    tx.remove_properties(LEASE_PROPERTY)
                else:
                    tx.set_properties({LEASE_PROPERTY: text})
            return
        except CommitFailedException:  # a MERGE committed in between: read again
            if attempt == tries - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
