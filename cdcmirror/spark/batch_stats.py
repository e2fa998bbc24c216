"""What one micro-batch did to one table: the counts, the seconds and the lags of the
mirror's structured batch log line (one JSON object per table and batch)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


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
    merge_seconds: float = 0.0
    table_seconds: float = 0.0  # everything for this table: decode, dedupe, classify, write
    # at the table's commit, from the source commit time of the batch's applicable events:
    # the newest event's delay, the median event's and the oldest event's
    lag_seconds: float | None = None
    lag_p50_seconds: float | None = None
    lag_max_seconds: float | None = None
    offsets: dict[int, int] = field(default_factory=dict)  # partition -> last offset
    starts: dict[int, int] = field(default_factory=dict)  # partition -> first offset
    stopped: str | None = None
    suspect_uuids: int = 0  # MariaDB UUID values that may have arrived shifted

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
        out["merge_seconds"] = round(self.merge_seconds, 3)
        out["table_seconds"] = round(self.table_seconds, 3)
        for name in ("lag_seconds", "lag_p50_seconds", "lag_max_seconds"):
            if out[name] is not None:
                out[name] = round(out[name], 3)
        return json.dumps(out, sort_keys=True)
