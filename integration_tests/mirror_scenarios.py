"""The mirror's correctness scenarios, the same for every source: each step changes the
source (or Kafka, or the job), runs the mirror, and compares the Iceberg table with the
source row by row, all columns."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from cdcmirror.connect_client import ConnectClient
from integration_tests import services
from integration_tests.mirror_env import continuous_mirror, mirror_rows, run_mirror_process
from integration_tests.mirror_fixture import Mirrored

CONNECTOR_SETTLE = 8.0  # seconds for Debezium to publish what the source just committed


def settle() -> None:
    time.sleep(CONNECTOR_SETTLE)


def workload_then_same(m: Mirrored, operations: int) -> int:
    m.workload.run(operations)
    settle()
    m.mirror()
    return m.assert_same()


def replay_changes_nothing(m: Mirrored, connector: str, offsets: list[dict[str, object]]) -> None:
    """Restart the connector from ``offsets`` (empty: from scratch, a new snapshot)."""
    before = mirror_rows(m.spark, m.identifier, m.columns(), m.source.dialect)
    client = ConnectClient(services.CONNECT)
    client.stop(connector)
    if offsets:
        client.alter_offsets(connector, offsets)
    else:
        client.reset_offsets(connector)
    client.resume(connector)
    client.wait_running(connector)
    settle()
    settle()
    m.mirror()
    after = mirror_rows(m.spark, m.identifier, m.columns(), m.source.dialect)
    assert after == before, "a replay must not change any row"
    m.assert_same()


def crash_after_commit_then_restart(m: Mirrored, operations: int) -> None:
    m.workload.run(operations)
    settle()
    before = len(m.snapshot_ids())
    crashed = run_mirror_process(m.config_path, {"CDCMIRROR_FAULT": "after-commit"})
    assert crashed.returncode == 86, crashed.stderr[-3000:]
    assert len(m.snapshot_ids()) > before, "the MERGE must have committed before the crash"
    m.mirror()  # re-runs the batch the checkpoint did not record
    m.assert_same()


def crash_mid_merge_then_restart(m: Mirrored, operations: int) -> None:
    m.workload.run(operations)
    settle()
    crashed = run_mirror_process(m.config_path, {"CDCMIRROR_FAULT": "mid-merge:0.2"})
    assert crashed.returncode == 86, crashed.stderr[-3000:]
    m.mirror()
    m.assert_same()


def poison_goes_to_dead_letter(m: Mirrored) -> None:
    producer = Producer({"bootstrap.servers": services.KAFKA})
    producer.produce(m.topic, key=b'{"id": 1}', value=b"\x00not json at all")
    producer.produce(m.topic, key=b"x", value=b'{"payload": {"op": "c", "after": {"id": "abc"}}}')
    producer.flush(10)
    m.workload.run(50)
    settle()
    m.mirror()
    rows = m.spark.sql(
        f"SELECT offset, error, value FROM {m.dead_letter} WHERE topic = '{m.topic}'"
    ).collect()
    values = {bytes(r.value) for r in rows}
    assert b"\x00not json at all" in values, rows
    assert b'{"payload": {"op": "c", "after": {"id": "abc"}}}' in values, rows
    assert all(r.error for r in rows)
    m.assert_same()


def sigterm_finishes_and_stops(m: Mirrored, operations: int) -> None:
    """The continuous job, stopped by SIGTERM once it has applied a batch: exit 0, in sync."""
    m.workload.run(operations)
    settle()
    before = len(m.snapshot_ids())
    with continuous_mirror(m.config_path) as job:
        deadline = time.monotonic() + 240
        while len(m.snapshot_ids()) == before:
            job.assert_alive()
            assert time.monotonic() < deadline, "the continuous job applied nothing in 240 s"
            time.sleep(2)
    assert "stopping after the current batch" in job.output
    m.assert_same()
