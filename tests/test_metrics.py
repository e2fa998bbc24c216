"""The mirror job's metrics: counted from batch stats, served over real HTTP."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cdcmirror.commands.mirror import serve_metrics
from cdcmirror.config import load_config
from cdcmirror.exceptions import ConfigError
from cdcmirror.metrics import MirrorMetrics
from cdcmirror.mirror.stats import TableStats


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def batch(table: str, **counts: int) -> TableStats:
    s = TableStats(table, table_seconds=1.5)
    for name, n in counts.items():
        assert isinstance(getattr(s, name), int), name
        setattr(s, name, n)
    return s


def test_batches_add_up_per_table_and_action() -> None:
    m = MirrorMetrics()
    first = batch("db.a", events=7, inserts=4, updates=1, duplicates=2)
    first.committed(100.0, 98_000_000, 97_000_000, 90_000_000)
    m.batch_done([first, batch("db.b", events=3, dead_lettered=3)], 2.0)
    m.batch_done([batch("db.a", events=2, deletes=1, stale=1)], 4.0)
    m.batch_failed()
    got = samples(generate_latest(m.registry).decode())
    a, b = (("table", "db.a"),), (("table", "db.b"),)

    def rows(table: str, action: str) -> float:
        return got[("cdcmirror_table_rows_total", (("action", action), ("table", table)))]

    assert got[("cdcmirror_table_events_total", a)] == 9
    assert [rows("db.a", x) for x in ("inserted", "updated", "deleted", "stale")] == [4, 1, 1, 1]
    assert rows("db.a", "duplicate") == 2
    assert rows("db.b", "dead_lettered") == 3
    assert got[("cdcmirror_batches_total", ())] == 2
    assert got[("cdcmirror_batch_failures_total", ())] == 1
    assert got[("cdcmirror_batch_duration_seconds_sum", ())] == 6.0
    # the lag of db.a's last commit stays: its second batch committed nothing applicable
    assert got[("cdcmirror_table_lag_seconds", a)] == 2.0
    assert got[("cdcmirror_table_lag_max_seconds", a)] == 10.0
    assert ("cdcmirror_table_lag_seconds", b) not in got
    assert got[("cdcmirror_table_batch_seconds", b)] == 1.5


def test_a_stopped_table_is_flagged_until_it_applies_again() -> None:
    m = MirrorMetrics()
    stopped = batch("db.a", events=1, dead_lettered=1)
    stopped.stopped = "schema change the mirror cannot apply"
    m.batch_done([stopped], 1.0)
    assert (
        samples(generate_latest(m.registry).decode())[
            ("cdcmirror_table_stopped", (("table", "db.a"),))
        ]
        == 1
    )
    m.batch_done([batch("db.a", events=1, inserts=1)], 1.0)
    assert (
        samples(generate_latest(m.registry).decode())[
            ("cdcmirror_table_stopped", (("table", "db.a"),))
        ]
        == 0
    )


def test_served_over_http() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = MirrorMetrics()
    m.batch_done([batch("db.a", events=5, inserts=5)], 1.0)
    server = m.serve("127.0.0.1", port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            got = samples(r.read().decode())
    finally:
        server.shutdown()
        server.server_close()
    assert got[("cdcmirror_table_events_total", (("table", "db.a"),))] == 5


def test_a_taken_port_is_a_clear_configuration_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = load_config(environ={"CDCMIRROR_MIRROR__METRICS_PORT": str(port)}, cwd=tmp_path)
        with pytest.raises(ConfigError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            serve_metrics(config)


def test_no_port_no_endpoint(tmp_path: Path) -> None:
    assert serve_metrics(load_config(environ={}, cwd=tmp_path)) == (None, None)
