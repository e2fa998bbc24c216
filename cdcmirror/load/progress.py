"""Progress of a table's load: rows read, rows/s and an ETA from the reads (Spark tasks)
done so far. Pure.

A read counts when its task ends, so rows are estimated as the table's estimate times the
share of reads done, until the load ends and the exact count is known.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class TableProgress:
    table: str
    estimated_rows: int
    parts_done: int
    parts: int
    seconds: float
    rows: int | None = None  # the exact count, once the load is done

    @property
    def done(self) -> bool:
        return self.rows is not None

    @property
    def rows_read(self) -> int:
        """Rows read so far (estimated while running).

        >>> TableProgress("t", 1000, 1, 4, 2.0).rows_read
        250
        """
        if self.rows is not None:
            return self.rows
        return self.estimated_rows * self.parts_done // max(1, self.parts)

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Seconds left at the rate so far; None before the first read ends.

        >>> TableProgress("t", 1000, 1, 4, 2.0).eta_seconds
        6.0
        >>> TableProgress("t", 1000, 0, 4, 2.0).eta_seconds is None
        True
        """
        if self.done:
            return 0.0
        if self.parts_done == 0:
            return None
        return self.seconds * (self.parts - self.parts_done) / self.parts_done

    def json_line(self) -> str:
        """One JSON line (logs, pipes).

        >>> TableProgress("db.t", 1000, 1, 4, 2.0).json_line()[:60]
        '{"event": "initial_load", "table": "db.t", "done": false, "r'
        """
        eta = self.eta_seconds
        return json.dumps(
            {
                "event": "initial_load",
                "table": self.table,
                "done": self.done,
                "rows": self.rows_read,
                "estimated_rows": self.estimated_rows,
                "rows_per_s": round(self.rows_per_second),
                "eta_s": None if eta is None else round(eta, 1),
                "reads_done": self.parts_done,
                "reads": self.parts,
                "seconds": round(self.seconds, 1),
            }
        )

    def text(self) -> str:
        """One line for a terminal.

        >>> TableProgress("db.t", 1000, 4, 4, 2.0, rows=990).text()
        'db.t: 990 rows in 2.0 s (495 rows/s), done'
        """
        head = f"{self.table}: {self.rows_read:,} rows in {self.seconds:.1f} s"
        rate = f"({self.rows_per_second:,.0f} rows/s)"
        if self.done:
            return f"{head} {rate}, done"
        eta = self.eta_seconds
        left = "ETA unknown" if eta is None else f"ETA {eta:.0f} s"
        return f"{head} {rate}, {self.parts_done}/{self.parts} reads, {left}"
