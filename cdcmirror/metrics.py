"""The mirror job's Prometheus metrics (``[mirror] metrics_port``): the one module that
imports ``prometheus_client``. The applier hands over each batch's ``TableStats``; this
module only counts them, so the numbers are those of the batch log line.

Per table (label ``table``, the Iceberg identifier): events, rows by action, the table's
seconds in the last batch, the lag at commit (source commit -> Iceberg commit) and the time
of the last commit; per job: batches, failed batches and their duration.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from cdcmirror.mirror.stats import TableStats

ACTIONS = ("inserted", "updated", "deleted", "stale", "duplicate", "dead_lettered")
"""The ``action`` label of ``cdcmirror_table_rows_total``, from the batch line's counts."""

DURATION_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)


def _actions(s: TableStats) -> dict[str, int]:
    """The rows of one table's batch by action.

    >>> _actions(TableStats("t", inserts=2, deletes=1, dead_lettered=3))["dead_lettered"]
    3
    """
    return {
        "inserted": s.inserts,
        "updated": s.updates,
        "deleted": s.deletes,
        "stale": s.stale,
        "duplicate": s.duplicates,
        "dead_lettered": s.dead_lettered,
    }


class MirrorMetrics:
    """The job's metrics in a registry of their own (two jobs in one process, as in tests,
    do not share one)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.batches = Counter("cdcmirror_batches", "Micro-batches applied", registry=r)
        self.failures = Counter(
            "cdcmirror_batch_failures", "Micro-batches that failed (the job stops)", registry=r
        )
        self.duration = Histogram(
            "cdcmirror_batch_duration_seconds",
            "Seconds of a micro-batch, read to commit of every table",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.last_batch = Gauge(
            "cdcmirror_last_batch_timestamp_seconds", "When the last batch ended", registry=r
        )

        def per_table(name: str, text: str) -> Gauge:
            return Gauge(name, text, ["table"], registry=r)

        self.events = Counter(
            "cdcmirror_table_events", "Kafka events of the table", ["table"], registry=r
        )
        self.rows = Counter(
            "cdcmirror_table_rows",
            "Events by what they did: inserted, updated, deleted, stale (older than the "
            "stored row), duplicate (superseded in the batch), dead_lettered",
            ["table", "action"],
            registry=r,
        )
        self.table_seconds = per_table(
            "cdcmirror_table_batch_seconds", "The table's seconds in the last batch"
        )
        self.lag = per_table(
            "cdcmirror_table_lag_seconds",
            "At the table's last commit: seconds since the source commit of its newest event",
        )
        self.lag_max = per_table(
            "cdcmirror_table_lag_max_seconds",
            "At the table's last commit: seconds since the source commit of its oldest event",
        )
        self.last_commit = per_table(
            "cdcmirror_table_last_commit_timestamp_seconds",
            "When the table last committed source changes",
        )
        self.stopped = per_table(
            "cdcmirror_table_stopped",
            "1 while the table's events are dead-lettered instead of applied (see the log)",
        )

        self.point_lag = Gauge(
            "cdcmirror_consistent_point_lag_seconds",
            "After each batch: seconds since the source commit of the consistent point's "
            "transaction (mirror.consistent_tag)",
            registry=r,
        )
        self.point_commit = Gauge(
            "cdcmirror_consistent_point_commit_timestamp_seconds",
            "The source commit time of the consistent point's transaction",
            registry=r,
        )

    def point_at(self, commit_ms: int) -> None:
        """After a batch: the consistent point is at a transaction committed at ``commit_ms``
        (epoch milliseconds)."""
        self.point_commit.set(commit_ms / 1000.0)
        self.point_lag.set(max(0.0, time.time() - commit_ms / 1000.0))

    def batch_done(self, stats: Iterable[TableStats], seconds: float) -> None:
        """Count one applied batch and what it did to each table."""
        now = time.time()
        self.batches.inc()
        self.duration.observe(seconds)
        self.last_batch.set(now)
        for s in stats:
            self.events.labels(s.table).inc(s.events)
            for action, n in _actions(s).items():
                self.rows.labels(s.table, action).inc(n)
            self.table_seconds.labels(s.table).set(s.table_seconds)
            self.stopped.labels(s.table).set(1 if s.stopped else 0)
            if s.lag_seconds is not None and s.lag_max_seconds is not None:
                self.lag.labels(s.table).set(s.lag_seconds)
                self.lag_max.labels(s.table).set(s.lag_max_seconds)
                self.last_commit.labels(s.table).set(now)

    def batch_failed(self) -> None:
        self.failures.inc()

    def serve(self, host: str, port: int) -> Any:
        """Serve ``/metrics`` on ``host:port`` from a daemon thread; returns the server
        (``shutdown()`` it when the job ends)."""
        server, _thread = start_http_server(port, host, registry=self.registry)
        return server
