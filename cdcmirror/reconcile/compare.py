"""Reconcile verdicts as plain data: per-table facts in, status and differences out. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from cdcmirror import dialects

IN_SYNC = "in sync"
DRIFT = "drift"
LAGGING = "lagging"
ERROR = "error"

BucketSums = dict[int, tuple[int, int]]  # bucket -> (rows, sum of row hashes)
KeyRows = dict[str, tuple[tuple[str, ...], int]]  # key text -> (key values, row hash)


@dataclass
class DeepResult:
    buckets: int
    drifted_buckets: list[int]
    changed: list[dict[str, str]] = field(default_factory=list)
    missing: list[dict[str, str]] = field(default_factory=list)  # at the source, not mirrored
    extra: list[dict[str, str]] = field(default_factory=list)  # in the mirror only
    skipped_columns: list[str] = field(default_factory=list)
    keys_truncated: bool = False

    @property
    def differs(self) -> bool:
        return bool(self.drifted_buckets or self.changed or self.missing or self.extra)


@dataclass
class HistoryCheck:
    """A history table against its mirrored table: its current versions counted (and, with
    ``--deep``, compared row by row, and its chains checked)."""

    table: str
    current: int
    differing: int | None = None  # --deep: current versions and live rows not in the other
    broken: int | None = None  # --deep: versions that break their key's chain

    def problem(self, mirror_rows: int | None) -> str | None:
        """What is wrong, or None."""
        out = []
        if mirror_rows is not None and self.current != mirror_rows:
            out.append(f"{self.current} current versions against {mirror_rows} rows")
        if self.differing:
            out.append(f"{self.differing} current versions and rows differ")
        if self.broken:
            out.append(f"{self.broken} versions break their key's chain")
        return f"history {self.table}: " + "; ".join(out) if out else None


@dataclass
class TableCheck:
    identifier: str
    source: str  # schema.table at the source
    flavor: str
    topic: str
    source_rows: int | None = None
    mirror_rows: int | None = None
    caught_up: bool = False  # the mirror had committed every event Kafka held for the topic
    events_behind: int = 0
    position: list[int] | None = None  # newest _cdc_position in the mirror
    source_ts: datetime | None = None  # newest _cdc_source_ts in the mirror
    snapshot_id: int | None = None
    snapshot_time: datetime | None = None
    attempts: int = 0
    deep: DeepResult | None = None
    error: str | None = None
    history: HistoryCheck | None = None  # the table's history table (mirror.history)

    @property
    def difference(self) -> int | None:
        if self.source_rows is None or self.mirror_rows is None:
            return None
        return self.mirror_rows - self.source_rows

    @property
    def status(self) -> str:
        if self.error:
            return ERROR
        history = self.history.problem(self.mirror_rows) if self.history else None
        if self.difference == 0 and not (self.deep and self.deep.differs) and not history:
            return IN_SYNC if self.caught_up else LAGGING
        return DRIFT if self.caught_up else LAGGING

    def lag_seconds(self, now: datetime) -> float:
        """How far behind the source the mirror is: 0 when it had applied everything Kafka
        held, else the age of the newest change it has applied."""
        if self.caught_up or self.source_ts is None:
            return 0.0
        return max(0.0, (now - self.source_ts).total_seconds())


def counts_settled(check: TableCheck) -> bool:
    """Whether another look cannot change the verdict on counts."""
    history = check.history.problem(check.mirror_rows) if check.history else None
    return check.error is not None or (check.caught_up and check.difference == 0 and not history)


def drifted_buckets(source: BucketSums, mirror: BucketSums) -> list[int]:
    """Buckets whose row count or checksum differ, in order."""
    return sorted(b for b in set(source) | set(mirror) if source.get(b) != mirror.get(b))


def diff_keys(
    key_names: tuple[str, ...], source: KeyRows, mirror: KeyRows, limit: int
) -> tuple[list[dict[str, str]], list[dict[str, str]], list[dict[str, str]], bool]:
    """(changed, missing from the mirror, extra in the mirror, truncated) by key text."""

    def named(values: tuple[str, ...]) -> dict[str, str]:
        return dict(zip(key_names, values, strict=True))

    changed = [
        named(source[k][0]) for k in sorted(source) if k in mirror and mirror[k][1] != source[k][1]
    ]
    missing = [named(source[k][0]) for k in sorted(source) if k not in mirror]
    extra = [named(mirror[k][0]) for k in sorted(mirror) if k not in source]
    truncated = len(changed) + len(missing) + len(extra) > limit
    return changed[:limit], missing[:limit], extra[:limit], truncated


def in_both(first: list[dict[str, str]], second: list[dict[str, str]]) -> list[dict[str, str]]:
    """The keys found in both looks, in the first look's order (a key that was in flight
    during one look drops out)."""
    seen = {tuple(sorted(k.items())) for k in second}
    return [k for k in first if tuple(sorted(k.items())) in seen]


def exit_code(checks: list[TableCheck]) -> int:
    """0 every table in sync, 2 a table could not be checked, else 1."""
    if any(c.status == ERROR for c in checks):
        return 2
    return 0 if all(c.status == IN_SYNC for c in checks) else 1


def position_text(flavor: str, position: list[int] | None) -> str:
    """The source part of a ``_cdc_position`` as people write it."""
    if not position:
        return "-"
    return dialects.of_flavor(flavor).position_label(position)
