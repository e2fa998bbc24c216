"""Is the connector's binlog position still in the server's binlog history? Pure.

``RESET MASTER`` deletes every binlog file and starts again at ``<basename>.000001``. The
connector's task fails at once ("could not find next log"), and when it is restarted (the
mirror's watch does that) it resumes at its stored file and position: a file that is gone,
or the new file of the same name, whose content at that position is another history. Seen
with Debezium 3.5 on MariaDB 10.11: the task is RUNNING again and streams nothing, so every
change after the reset is lost without a sign. A failover to a server with other binlog
files, or a renamed basename (``log_bin``), looks the same. Purged binlogs behind a stopped
connector lose the changes in between too.

The connector's committed offset (file, position) is compared with ``SHOW BINARY LOGS``
(file names and sizes): the position must be inside the server's history.
"""

from __future__ import annotations

from cdcmirror.mirror.positions import FRESH_SNAPSHOT

REMEDY = f"Changes after that point never reach the mirror. {FRESH_SNAPSHOT}"


def _split(name: str) -> tuple[str, int] | None:
    base, _, number = name.rpartition(".")
    return (base, int(number)) if base and number.isdigit() else None


def offset_problem(connector: str, file: str, pos: int, logs: list[tuple[str, int]]) -> str | None:
    """What is wrong with ``connector``'s offset (binlog ``file`` and ``pos``) given the
    server's binlog files and sizes ``logs``; None when it is inside them.

    >>> logs = [("mysql-bin.000007", 900), ("mysql-bin.000008", 400)]
    >>> offset_problem("c", "mysql-bin.000008", 350, logs) is None
    True
    >>> offset_problem("c", "mysql-bin.000008", 5000, logs)[:66]
    'connector c reads mysql-bin.000008 at 5000, but that file ends at '
    >>> offset_problem("c", "mysql-bin.000031", 50, logs)[:60]
    'connector c reads mysql-bin.000031 at 50, but the newest bin'
    >>> offset_problem("c", "mysql-bin.000002", 50, logs)[:62]
    'connector c reads mysql-bin.000002 at 50, but the server keeps'
    >>> offset_problem("c", "other.000002", 50, logs)[:55]
    'connector c reads other.000002 at 50, but the server wr'
    """
    parsed = [(p, size) for name, size in logs if (p := _split(name))]
    at = _split(file)
    if not parsed or at is None:
        return None
    where = f"connector {connector} reads {file} at {pos}, but"
    bases = {base for (base, _), _ in parsed}
    if at[0] not in bases:
        return (
            f"{where} the server writes its binlog as {', '.join(sorted(bases))}.* now (a "
            f"renamed log_bin or another server). {REMEDY}"
        )
    numbers = {n: size for (base, n), size in parsed if base == at[0]}
    newest, oldest = max(numbers), min(numbers)
    if at[1] > newest:
        return (
            f"{where} the newest binlog file is {at[0]}.{newest:06d}: the server's binlog was "
            f"reset (RESET MASTER) or the connector points at another server. {REMEDY}"
        )
    if at[1] < oldest:
        return (
            f"{where} the server keeps binlog files from {at[0]}.{oldest:06d} on only: the "
            f"files in between were purged before the connector read them. {REMEDY}"
        )
    if at[1] in numbers and pos > numbers[at[1]]:
        return (
            f"{where} that file ends at {numbers[at[1]]}: the server's binlog was reset "
            f"(RESET MASTER) and started again under the same name. {REMEDY}"
        )
    return None
