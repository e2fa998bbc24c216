"""Source positions: their order (DESIGN.md rule 1), as Python values and as Spark SQL
(``newer``, ``position_sql``); each engine's own order comes from ``dialects/``. Pure.

A position is a list of longs compared element by element; only the first ``n`` elements
(``source_length``) come from the source, the rest are Kafka's partition and offset,
which order events inside one batch but never decide between a batch and what is stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from cdcmirror import dialects
from cdcmirror.mirror.reload_mark import IN_RELOAD


def newer(a: str, b: str, n: int) -> str:
    """Spark SQL: source position ``a`` is greater than ``b`` (their first ``n`` elements).

    >>> newer("s._cdc_position", "t._cdc_position", 3)
    'slice(s._cdc_position, 1, 3) > slice(t._cdc_position, 1, 3)'
    """
    return f"slice({a}, 1, {n}) > slice({b}, 1, {n})"


def source_length(dialect: str) -> int:
    """How many leading position elements come from the source (the guard compares these).

    >>> source_length("postgresql"), source_length("mysql")
    (3, 4)
    """
    return dialects.of(dialect).position_length


def position_literal(position: Sequence[int]) -> str:
    """A position as a Spark SQL literal (``ARRAY<BIGINT>``, the type of ``_cdc_position``).

    >>> position_literal([3, 0, 7])
    'array(3L, 0L, 7L)'
    """
    return f"array({', '.join(f'{int(x)}L' for x in position)})"


def later_mark(stored: Sequence[int], batch: Sequence[int], n: int) -> list[int]:
    """The truncate mark to keep: the later of the stored one and the batch's, by source part.

    A replayed TRUNCATE (older than the stored mark) must not move the mark back, or the
    replayed events between the two would bring truncated rows back.

    >>> later_mark([1, 90, 90, 0, 7], [1, 50, 50, 0, 99], 3)
    [1, 90, 90, 0, 7]
    >>> later_mark([], [1, 50, 50, 0, 99], 3)
    [1, 50, 50, 0, 99]
    >>> later_mark([1, 50, 50, 0, 7], [1, 60, 61, 0, 1], 3)
    [1, 60, 61, 0, 1]
    """
    if stored and list(stored[:n]) >= list(batch[:n]):
        return list(stored)
    return list(batch)


# -- a source history that restarted ---------------------------------------------------------
# After `RESET MASTER`, a failover to a server with other binlog files, a new binlog basename
# (MySQL/MariaDB) or a new PostgreSQL cluster, the source's positions start again below the
# stored ones, and every later change would compare as older than the row it changes and be
# skipped as a replay. A replay is older in both position and commit time: within one history
# a row's next change has a later position and a later (or equal) commit time, because its
# writer waited for the previous writer's commit. A change that is older by position but
# newer by commit time than the row or tombstone it meets therefore comes from another
# history. The phase element is left out: a snapshot read of a new history sorts before a
# streamed row by phase whatever the server, and its source position tells the two apart.
# (MariaDB stamps a row event with its statement's start, in seconds: a statement that began
# before another one on the same row but reached it after that one committed inverts the
# times. Meeting such a pair again in a Debezium replay would stop the mirror loudly, never
# lose a row.)


def went_backwards_sql(event: str, event_ts: str, stored: str, stored_ts: str, n: int) -> str:
    """Spark SQL: ``event`` (position, commit time ``event_ts``) comes from another source
    history than ``stored`` (NULL when nothing is stored). ``n``: the source elements.

    >>> went_backwards_sql("s.p", "s.ts", "t.p", "t.ts", 4)
    '(t.p IS NOT NULL AND s.ts > t.ts AND slice(s.p, 2, 3) < slice(t.p, 2, 3))'
    """
    return (
        f"({stored} IS NOT NULL AND {event_ts} > {stored_ts} "
        f"AND slice({event}, 2, {n - 1}) < slice({stored}, 2, {n - 1}))"
    )


FRESH_SNAPSHOT = (
    "Mirror again from a fresh snapshot: `cdcmirror teardown --yes --topics --checkpoint "
    "--tables`, then `cdcmirror bootstrap` and `cdcmirror mirror`"
)


def history_restarted_message(table: str, count: int, example: str) -> str:
    """Why the mirror stops when changes of another source history meet stored rows;
    ``example`` describes one of them.

    >>> history_restarted_message("db.t", 2, "id=1 ...")[:64]
    'db.t: 2 change(s) come from a restarted source history: they are'
    """
    return (
        f"{table}: {count} change(s) come from a restarted source history: they are older by "
        f"source position than what the mirror stored, yet committed later ({example}). The "
        "source's positions started again (RESET MASTER, a failover to another server, a new "
        "binlog basename or database cluster, or the connector's offsets were reset on "
        "another server); applied as usual these changes would be skipped as old. Nothing "
        f"of them was written. {FRESH_SNAPSHOT}"
    )


def behind_truncate_sql(mark: Sequence[int], mark_ts_us: int | None, n: int) -> str:
    """Spark SQL aggregate: how many good events of the batch come from a restarted source
    history by the stored truncate ``mark`` (committed at ``mark_ts_us``): they would be
    dropped as older than the TRUNCATE.

    >>> behind_truncate_sql([], None, 4)
    '0'
    >>> behind_truncate_sql([1, 2, 30, 0, 0, 9], 1_000, 4)[:54]
    'count_if(_cdc_error IS NULL AND (array(1L, 2L, 30L, 0L'
    """
    if not mark or mark_ts_us is None:
        return "0"
    literal = position_literal(mark)
    gap = went_backwards_sql(
        "_cdc_position", "_cdc_source_ts", literal, f"timestamp_micros({int(mark_ts_us)}L)", n
    )
    return f"count_if(_cdc_error IS NULL AND {gap})"


# -- rows of the initial load ----------------------------------------------------------------
LOADED_KAFKA = [-1, -1]  # no Kafka record: partition and offset of a loaded row


def binlog_file_index(file: str) -> int:
    """The number of a binlog file, as the stream's positions have it (``envelope.py``).

    >>> binlog_file_index("mysql-bin.000042")
    42
    """
    return int(file.rsplit(".", 1)[-1])


def loaded_position(dialect: str, start: tuple[int, ...]) -> list[int]:
    """The position of a row read by the initial load at the stream's fixed ``start``
    (PostgreSQL: the slot's LSN; MySQL/MariaDB: binlog file index and offset): snapshot
    phase, so every change streamed from ``start`` on is newer (``load/plan.py``).

    >>> loaded_position("postgresql", (5000,))
    [0, 5000, 5000, -1, -1]
    >>> loaded_position("mysql", (2, 1234))
    [0, 2, 1234, 0, -1, -1]
    """
    return [0, *dialects.of(dialect).loaded_source_order(start), *LOADED_KAFKA]


def observed_position(dialect: str, at: tuple[int, ...]) -> list[int]:
    """The position of something cdcmirror saw at the source itself, not through Debezium,
    at its log position ``at`` (as ``loaded_position`` takes it): streamed phase, so it
    orders among the changes streamed around it; no Kafka record.

    >>> observed_position("postgresql", (5000,))
    [1, 5000, 5000, -1, -1]
    """
    return [1, *dialects.of(dialect).loaded_source_order(at), *LOADED_KAFKA]


def reread_sql(op: str = "_cdc_op", position: str = "_cdc_position") -> str:
    """Spark SQL: a snapshot read made while the table streams (Debezium's incremental
    snapshot, which ``cdcmirror repair`` asks for): a read of the streamed phase.

    >>> reread_sql()
    "(_cdc_op = 'r' AND element_at(_cdc_position, 1) = 1)"
    """
    return f"({op} = 'r' AND element_at({position}, 1) = 1)"


def position_gap_sql(dialect: str, position: str = "_cdc_position") -> str:
    """SQL: an element of an event's ``position`` (``position_sql``) is NULL, its source block
    missing or incomplete. Element by element rather than ``exists(…, x -> x IS NULL)``:
    Spark compiles no projection holding a lambda into its stage's generated code, and the
    decode's rows would be written out and read back around it.

    >>> position_gap_sql("postgresql", "p")
    '(p[0] IS NULL OR p[1] IS NULL OR p[2] IS NULL OR p[3] IS NULL OR p[4] IS NULL)'
    """
    size = source_length(dialect) + 2  # then the Kafka partition and offset
    return f"({' OR '.join(f'{position}[{i}] IS NULL' for i in range(size))})"


def snapshot_read_sql(p: str) -> str:
    """SQL: the event of payload ``p`` is a read of an initial snapshot (phase 0), not a
    streamed change or an incremental-snapshot read (phase 1)."""
    return f"({p}.op = 'r' AND coalesce({p}.source.snapshot, 'false') <> 'incremental')"


def position_sql(dialect: str, p: str, in_reload: str | None = None) -> str:
    """An event's position (``_cdc_position``) from its Debezium payload ``p``: the phase
    (snapshot reads before streamed changes), the source's own order, then the Kafka
    partition and offset as the last tie-breaker. ``in_reload``: SQL true for a change the
    table's re-loaded rows hold, whose phase is then ``IN_RELOAD`` (``reload_mark.py``)."""
    phase = f"IF({snapshot_read_sql(p)}, 0, 1)"
    if in_reload:
        phase = f"IF({in_reload}, {IN_RELOAD}, {phase})"
    parts = [phase, *dialects.of(dialect).source_order_sql(p)]
    return f"array({', '.join(parts)}, CAST(partition AS BIGINT), offset)"
