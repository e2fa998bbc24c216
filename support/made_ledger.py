"""The names a test or benchmark process made (``services.unique``), written down as they are
made, a file per process under the stack's state directory, so that what a process killed
before its cleanup left behind is removed by the next run (``services.sweep_dead``).

Left behind, a Debezium connector of a killed run goes on running in the stack's Connect,
whose connectors outlive the processes that made them: a PostgreSQL one keeps its
replication slot active, and PostgreSQL decodes every WAL record of the test database for
it, whatever its tables. Five such connectors, from benchmarks and chaos runs stopped by a
timeout, were found running beside a CI run.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cdcmirror import paths


def ledger_dir() -> Path:
    return paths.stack_dir() / "made"


def _started(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (None: no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22; the name in () may hold spaces


def _own() -> Path:
    pid = os.getpid()
    return ledger_dir() / f"{pid}-{_started(pid)}"


def record(name: str) -> None:
    """Write down that this process made ``name``."""
    ledger_dir().mkdir(parents=True, exist_ok=True)
    with _own().open("a") as out:
        out.write(name + "\n")


def forgotten() -> None:
    """This process removed what it made: its ledger goes."""
    _own().unlink(missing_ok=True)


def _is_alive(ledger: Path) -> bool:
    pid, _, started = ledger.name.partition("-")
    return pid.isdigit() and _started(int(pid)) == started


def dead_ledgers() -> dict[Path, list[str]]:
    """The ledgers of processes that ended without removing what they made, and their names."""
    if not ledger_dir().is_dir():
        return {}
    found = {}
    for ledger in sorted(ledger_dir().iterdir()):
        if ledger.is_file() and not ledger.name.startswith(".") and not _is_alive(ledger):
            found[ledger] = [n for n in ledger.read_text().splitlines() if n]
    return found


@contextmanager
def sweeping() -> Iterator[bool]:
    """Whether this process may sweep now: one process at a time (the others go on)."""
    ledger_dir().mkdir(parents=True, exist_ok=True)
    with (ledger_dir() / ".sweep").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
