"""What one micro-batch did to one table: the counts, the seconds and the lags of the
mirror's structured batch log line (one JSON object per table and batch)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

PHASES = (
    "decode",
    "point",
    "history",
    "truncate",
    "dedupe_classify",
    "counts",
    "merge",
    "tombstones",
)
"""The phases of applying one table's batch, in order, as ``phase_seconds`` names them:
``decode`` (the JSON/Avro decode and one aggregate over it: counts, bounds, truncates),
``point`` (with the consistent tag: the wait for the batch's proof, made beside the decode,
``spark/consistent.py``),
``history`` (the batch's versions into the table's history table, ``mirror/history.py``),
``dedupe_classify`` (newest event per key, joined with the stored positions), ``counts``
(the classified actions counted; in a batch MERGEd without a classification, its deletes of
stored rows), ``merge`` (the MERGE into the table, with its commit),
``tombstones`` (the deletes appended to the tombstone table)."""


@dataclass
class TableStats:
    table: str
    events: int = 0
    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    duplicates: int = 0
    stale: int = 0
    dead_lettered: int = 0
    truncates: int = 0
    table_seconds: float = 0.0  # everything for this table: decode, dedupe, classify, write
    # at the table's commit, from the source commit time of the batch's applicable events:
    # the newest event's delay, the median event's and the oldest event's
    lag_seconds: float | None = None
    lag_p50_seconds: float | None = None
    lag_max_seconds: float | None = None
    offsets: dict[int, int] = field(default_factory=dict)  # partition -> last offset
    starts: dict[int, int] = field(default_factory=dict)  # partition -> first offset
    stopped: str | None = None
    phase_seconds: dict[str, float] = field(default_factory=dict)  # PHASES that ran
    spark_jobs: int = 0  # the Spark jobs of the table's work (decode to tombstones)
    replayed: int = 0  # a stream's events of a batch it had committed before: not written
    keys_broadcast: bool = False  # stored rows cut to the batch's keys (merge_sql.broadcasts_keys)
    inserts_only: bool = False  # MERGEd without a MATCHED branch (merge_sql.merge_sql)
    direct: bool = False  # MERGEd without a classification (mirror/direct_merge.py)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Adds the time of the ``with`` block to ``phase_seconds[name]``.

        >>> s = TableStats("t")
        >>> with s.phase("merge"):
        ...     pass
        >>> list(s.phase_seconds)
        ['merge']
        """
        assert name in PHASES, name
        started = time.monotonic()
        try:
            yield
        finally:
            spent = time.monotonic() - started
            self.phase_seconds[name] = self.phase_seconds.get(name, 0.0) + spent

    def add(self, part: TableStats) -> None:
        """Count in the work of ``part``, a first commit of the same table's batch (the
        consistent point's split, ``spark/cdc/table.py``); the lags stay this one's.

        >>> s, first = TableStats("t", inserts=2), TableStats("t", inserts=1, deletes=3)
        >>> s.add(first)
        >>> s.inserts, s.deletes
        (3, 3)
        """
        for name in ("inserts", "updates", "deletes", "duplicates", "stale", "dead_lettered"):
            setattr(self, name, getattr(self, name) + getattr(part, name))
        self.truncates += part.truncates
        for phase, seconds in part.phase_seconds.items():
            self.phase_seconds[phase] = self.phase_seconds.get(phase, 0.0) + seconds

    @property
    def entombed(self) -> bool:
        """Whether the batch appended tombstones (its ``tombstones`` phase ran)."""
        return "tombstones" in self.phase_seconds

    @property
    def merge_seconds(self) -> float:
        """The MERGE (or append) of the table's rows, with its commit."""
        return self.phase_seconds.get("merge", 0.0)

    def committed(
        self, now: float, newest_us: int | None, median_us: int | None, oldest_us: int | None
    ) -> None:
        """Record the lags at commit time ``now`` (epoch seconds), from source commit times
        in epoch microseconds (None: the batch had no applicable event for this table).

        >>> s = TableStats("t")
        >>> s.committed(100.0, 99_000_000, 97_000_000, 90_000_000)
        >>> (s.lag_seconds, s.lag_p50_seconds, s.lag_max_seconds)
        (1.0, 3.0, 10.0)
        """
        if newest_us is None or median_us is None or oldest_us is None:
            return
        self.lag_seconds = now - newest_us / 1e6
        self.lag_p50_seconds = now - median_us / 1e6
        self.lag_max_seconds = now - oldest_us / 1e6

    def line(self, batch_id: int) -> str:
        """The batch log line.

        >>> json.loads(TableStats("db.t", events=3, offsets={0: 9}).line(7))["offsets"]
        {'0': 9}
        """
        out = {"batch": batch_id, **self.__dict__}
        out["offsets"] = {str(k): v for k, v in self.offsets.items()}
        out["starts"] = {str(k): v for k, v in self.starts.items()}
        out["merge_seconds"] = round(self.merge_seconds, 3)  # a phase's, kept for its readers
        out["table_seconds"] = round(self.table_seconds, 3)
        out["phase_seconds"] = {
            k: round(self.phase_seconds[k], 3) for k in PHASES if k in self.phase_seconds
        }
        for name in ("lag_seconds", "lag_p50_seconds", "lag_max_seconds"):
            if out[name] is not None:
                out[name] = round(out[name], 3)
        return json.dumps(out, sort_keys=True)
