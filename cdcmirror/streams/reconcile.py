"""``cdcmirror reconcile`` for plain event streams: per topic partition, the events Kafka
holds up to the last offset the table holds against the table's rows. Pure.

An event is in the table once: its (topic, partition, offset) is one row, or one
dead letter. *Missing*: an event with a value that is neither; *duplicated*: an offset
in two rows or more; *extra*: a row whose offset Kafka does not hold as an event (in the
range Kafka still retains). Events after the last offset the table holds are *behind*, not
drift. A stream with ``key_columns`` keeps one row per key, not per event: its partitions
are listed with their offsets and not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdcmirror.mirror.checkpoint import Ranges

IN_SYNC, DRIFT, ERROR, NOT_COMPARED = "in_sync", "drift", "error", "not compared (keyed)"


@dataclass
class PartitionCheck:
    topic: str
    partition: int
    first: int  # the first offset Kafka holds
    end: int  # the offset after the last committed event
    held: int | None  # the last offset the table holds (None: none yet)
    events: int = 0  # events (records with a value) in [first, held]
    rows: int = 0  # the table's rows in [first, held]
    dead: int = 0  # dead-lettered events in [first, held]
    missing: list[int] = field(default_factory=list)
    duplicated: list[int] = field(default_factory=list)
    extra: list[int] = field(default_factory=list)

    @property
    def compared(self) -> tuple[int, int] | None:
        """The offsets compared, [first, held] (None when the range is empty)."""
        if self.held is None or self.held < self.first:
            return None
        return self.first, self.held

    @property
    def behind(self) -> int:
        """Offsets Kafka holds after the table's last one (markers count too)."""
        return max(0, self.end - 1 - (self.first - 1 if self.held is None else self.held))

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "first_offset": self.first,
            "end_offset": self.end,
            "held_offset": self.held,
            "events": self.events,
            "rows": self.rows,
            "dead_lettered": self.dead,
            "behind": self.behind,
            "missing_offsets": self.missing,
            "duplicated_offsets": self.duplicated,
            "extra_offsets": self.extra,
        }


@dataclass
class StreamCheck:
    table: str
    keyed: bool
    partitions: list[PartitionCheck] = field(default_factory=list)
    error: str | None = None

    @property
    def status(self) -> str:
        if self.error:
            return ERROR
        if self.keyed:
            return NOT_COMPARED
        bad = any(p.missing or p.duplicated or p.extra for p in self.partitions)
        return DRIFT if bad else IN_SYNC

    def as_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "status": self.status,
            "error": self.error,
            "partitions": [p.as_json() for p in self.partitions],
        }

    def lines(self) -> list[str]:
        """Text report lines.

        >>> c = StreamCheck("ns.clicks", False, [PartitionCheck("c", 0, 0, 10, 9, 10, 9, 0, [4])])
        >>> c.lines()[0]
        'stream ns.clicks: drift'
        >>> c.lines()[1]
        '  c[0] offsets 0..9: 10 events, 9 rows, 0 dead-lettered, 0 behind; missing 4'
        """
        out = [f"stream {self.table}: {self.status}" + (f" ({self.error})" if self.error else "")]
        for p in self.partitions:
            span = "none yet" if p.compared is None else f"{p.first}..{p.held}"
            text = (
                f"  {p.topic}[{p.partition}] offsets {span}: {p.events} events, {p.rows} rows, "
                f"{p.dead} dead-lettered, {p.behind} behind"
            )
            for label, offsets in (
                ("missing", p.missing),
                ("duplicated", p.duplicated),
                ("extra", p.extra),
            ):
                if offsets:
                    text += f"; {label} {', '.join(str(o) for o in offsets)}"
            out.append(text)
        return out


def kafka_ranges(checks: list[PartitionCheck]) -> Ranges | None:
    """The compared ranges, per topic and partition from the first offset to the one after
    the last (None when none is compared).

    >>> kafka_ranges([PartitionCheck("t", 1, 5, 20, 9), PartitionCheck("t", 0, 0, 0, None)])
    {'t': {1: (5, 10)}}
    """
    out: Ranges = {}
    for p in checks:
        span = p.compared
        if span is not None:
            out.setdefault(p.topic, {})[p.partition] = (span[0], span[1] + 1)
    return out or None


def ranges_sql(checks: list[PartitionCheck], topic: str, partition: str, offset: str) -> str:
    """Condition: the row's (topic, partition, offset) is in a compared range.

    >>> ranges_sql([PartitionCheck("t", 1, 5, 20, 9)], "tp", "p", "o")
    "((tp = 't' AND p = 1 AND o BETWEEN 5 AND 9))"
    """
    parts = []
    for p in checks:
        span = p.compared
        if span is not None:
            t = p.topic.replace("'", "''")
            parts.append(
                f"({topic} = '{t}' AND {partition} = {p.partition} AND {offset} "
                f"BETWEEN {span[0]} AND {span[1]})"
            )
    return f"({' OR '.join(parts)})" if parts else "false"


def stream_exit(check: StreamCheck) -> int:
    """The check's part of reconcile's exit code: 2 error, 1 drift, else 0."""
    return {ERROR: 2, DRIFT: 1}.get(check.status, 0)
