"""The continuous job's Prometheus endpoint, scraped while it runs: its numbers are what the
job applied (``cdcmirror/metrics.py``)."""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

from support import services
from support.mirror_env import MirrorJob, continuous_mirror
from support.mirror_fixture import Mirrored
from support.mirror_scenarios import BEHIND, settle, stop_while_behind

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def scrape(port: int) -> Samples:
    """Every sample of the endpoint: (name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def wait_for(
    job: MirrorJob, port: int, what: str, done: Callable[[Samples], bool], timeout: float = 240
) -> Samples:
    """Scrape until ``done`` holds (the job alive meanwhile)."""
    deadline = time.monotonic() + timeout
    last: Samples = {}
    while time.monotonic() < deadline:
        job.assert_alive()
        try:
            last = scrape(port)
        except OSError:  # not serving yet
            last = {}
        if last and done(last):
            return last
        time.sleep(1)
    raise AssertionError(f"metrics never showed {what}: {sorted(last.items())[:40]}")


def metrics_count_what_was_applied(
    m: Mirrored, while_running: Callable[[MirrorJob], None] | None = None, behind: int = 0
) -> MirrorJob:
    """Inserts, then updates, then deletes, each waited for on the endpoint; the counters are
    exactly those changes, the job's batches all succeeded, the lag and the last commit are
    those of this run, and once SIGTERM stopped the job the table equals the source.
    ``while_running`` checks more on the same job before it is stopped; ``behind``: then
    that many operations, and SIGTERM while the job works them off
    (``mirror_scenarios.stop_while_behind``; the next start applies the rest). The job
    returned."""
    settle(m)
    m.mirror()  # what earlier tests left: the job below starts with nothing behind
    table, w = m.source.table, m.workload
    new = w.next_id
    port = free_port()

    def rows(s: Samples, action: str) -> float:
        return s.get(
            ("cdcmirror_table_rows_total", (("action", action), ("table", m.identifier))), 0
        )

    env = {"CDCMIRROR_MIRROR__METRICS_PORT": str(port), **(BEHIND if behind else {})}
    with continuous_mirror(m.config_path, "1 second", env) as job:
        wait_for(job, port, "a batch", lambda s: s.get(("cdcmirror_batches_total", ())) is not None)
        started = time.time()
        with services.pg_connect() as conn:
            for i in range(5):
                conn.execute(f"INSERT INTO {table} (id, qty) VALUES (%s, 1)", (new + i,))
        wait_for(job, port, "5 inserts", lambda s: rows(s, "inserted") >= 5)
        with services.pg_connect() as conn:
            conn.execute(f"UPDATE {table} SET qty = 2 WHERE id BETWEEN %s AND %s", (new, new + 2))
        wait_for(job, port, "3 updates", lambda s: rows(s, "updated") >= 3)
        with services.pg_connect() as conn:
            conn.execute(f"DELETE FROM {table} WHERE id IN (%s, %s)", (new + 3, new + 4))
        got = wait_for(job, port, "2 deletes", lambda s: rows(s, "deleted") >= 2)
        w.ids += [new, new + 1, new + 2]
        w.next_id = new + 5
        if while_running is not None:
            while_running(job)
        if behind:
            stop_while_behind(m, job, behind)
    one = (("table", m.identifier),)
    actions = {a: rows(got, a) for a in ("inserted", "updated", "deleted", "stale", "duplicate")}
    assert actions == {"inserted": 5, "updated": 3, "deleted": 2, "stale": 0, "duplicate": 0}
    assert rows(got, "dead_lettered") == 0
    assert got[("cdcmirror_table_events_total", one)] == 10
    batches = got[("cdcmirror_batches_total", ())]
    assert batches >= 3, batches
    assert got[("cdcmirror_batch_duration_seconds_count", ())] == batches
    assert got[("cdcmirror_batch_failures_total", ())] == 0
    assert 0 < got[("cdcmirror_table_lag_seconds", one)] < 600
    assert (
        got[("cdcmirror_table_lag_max_seconds", one)] >= got[("cdcmirror_table_lag_seconds", one)]
    )
    assert started <= got[("cdcmirror_table_last_commit_timestamp_seconds", one)] <= time.time()
    assert got[("cdcmirror_table_stopped", one)] == 0
    assert 0 < got[("cdcmirror_table_batch_seconds", one)] < 600
    if behind:
        settle(m)
        m.mirror()
    m.assert_same()
    return job
