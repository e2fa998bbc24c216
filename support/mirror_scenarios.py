"""The mirror's correctness scenarios, the same for every source: each step changes the
source (or Kafka, or the job), runs the mirror, and compares the Iceberg table with the
source row by row, all columns."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer

from support import services
from support.mirror_env import (
    MirrorJob,
    mirror_rows,
    run_mirror_process,
)
from support.mirror_fixture import Mirrored

CONNECTOR_SETTLE = 8.0  # seconds for Debezium to publish what the source just committed


# The random workload with key-change chains, mirrored in one batch and in batches of 400
# events (both dialects): (max events per batch, 0 for one batch; operations).
WORKLOAD_BATCHES = pytest.mark.parametrize(
    ("batch", "operations"),
    [
        (0, 5000),
        (200, 1200),  # CI: about seven batches (the full size is the case below)
        pytest.param(400, 5000, marks=pytest.mark.full),
    ],
    ids=["one-batch", "small-batches", "small-batches-full"],
)


def batch_lines(caplog: pytest.LogCaptureFixture, identifier: str) -> list[dict[str, Any]]:
    """The in-process mirror's batch lines for this table, of batches with its events."""
    lines = [
        json.loads(r.getMessage().split("mirror batch ", 1)[1])
        for r in caplog.records
        if r.getMessage().startswith("mirror batch {")
    ]
    return [line for line in lines if line["table"] == identifier and line["events"]]


def settle(m: Mirrored | None = None) -> None:
    """Until Debezium has published what the source committed: for ``m`` a marker it must
    publish after those changes (``services.wait_published``; a MariaDB source needs the
    signal table, ``services.maria_signal_table``), otherwise a fixed wait."""
    if m is not None and m.source.dialect == "postgresql":
        services.wait_published(m.name)
    elif m is not None and services.maria_has_signal_table(db := m.source.table.split(".")[0]):
        services.wait_published_maria(m.name, db)
    else:
        time.sleep(CONNECTOR_SETTLE)


def workload_then_same(m: Mirrored, operations: int) -> int:
    m.workload.run(operations)
    settle(m)
    m.mirror()
    return m.assert_same()


def acceptance_run(m: Mirrored, operations: int, batch: int) -> None:
    """The workload, then the mirror until caught up: equal row by row, no dead letter, and
    with ``batch`` the events really went through many batches."""
    m.workload.run(operations)
    assert len(m.workload.rekeyed) > operations // 20, "the workload made few key changes"
    events = services.wait_topic_quiet(m.topic)
    m.mirror()
    m.assert_same()
    dead = m.spark.sql(f"SELECT count(*) FROM {m.dead_letter} WHERE topic = '{m.topic}'")
    assert dead.collect()[0][0] == 0, "events of the workload went to the dead-letter table"
    if batch:
        assert len(m.snapshot_ids()) >= events // batch // 2, "the events were not split up"


def replay_changes_nothing(m: Mirrored, connector: str, offsets: list[dict[str, object]]) -> None:
    """Restart the connector from ``offsets`` (empty: from scratch, a new snapshot)."""
    settle(m)
    m.mirror()  # what earlier tests left (a failed one may leave a backlog): applied first
    before = mirror_rows(m.spark, m.identifier, m.columns(), m.source.dialect)
    services.replay_connector(connector, offsets)
    settle(m)
    settle(m)
    m.mirror()
    after = mirror_rows(m.spark, m.identifier, m.columns(), m.source.dialect)
    assert after == before, "a replay must not change any row"
    m.assert_same()


def crash_after_commit_then_restart(m: Mirrored, operations: int) -> None:
    m.workload.run(operations)
    settle(m)
    before = len(m.snapshot_ids())
    crashed = run_mirror_process(m.config_path, {"CDCMIRROR_FAULT": "after-commit"})
    assert crashed.returncode == 86, crashed.stderr[-3000:]
    assert len(m.snapshot_ids()) > before, "the MERGE must have committed before the crash"
    m.mirror()  # re-runs the batch the checkpoint did not record
    m.assert_same()


def lost_checkpoint_resumes_from_table_offsets(m: Mirrored, logs: Callable[[], str]) -> None:
    """A batch committed to the table, the job killed before Spark's checkpoint recorded it,
    then the checkpoint directory deleted: the next run starts from the Kafka offsets the
    table's snapshots record (that batch again, then the new events), not from the start of
    the topic, and the table equals the source."""
    m.workload.run(150)
    settle(m)
    m.mirror()
    m.workload.run(100)
    settle(m)
    crashed = run_mirror_process(m.config_path, {"CDCMIRROR_FAULT": "after-commit"})
    assert crashed.returncode == 86, crashed.stderr[-3000:]
    shutil.rmtree(m.config.path("mirror", "checkpoint_location"))
    m.workload.run(100)
    settle(m)
    total = services.topic_size(m.topic)
    before = logs()
    m.mirror()
    m.assert_same()
    text = logs()[len(before) :]
    assert "resuming from the Kafka offsets their snapshots record" in text, text[-3000:]
    lines = [json.loads(x) for x in re.findall(r"mirror batch (\{.*\})", text)]
    mine = [line for line in lines if line["table"] == m.identifier and line["events"]]
    read = sum(line["events"] for line in mine)
    assert 0 < read < total / 2, (read, total)
    # the batch run again is older than the table's high-water mark: classified, not direct
    assert not mine[0]["direct"] and mine[0]["stale"] > 0, mine[0]


def crash_mid_merge_then_restart(m: Mirrored, operations: int) -> None:
    m.workload.run(operations)
    settle(m)
    crashed = run_mirror_process(m.config_path, {"CDCMIRROR_FAULT": "mid-merge:0.2"})
    assert crashed.returncode == 86, crashed.stderr[-3000:]
    m.mirror()
    m.assert_same()


def poison_then_mirror(m: Mirrored, poison: list[tuple[bytes, bytes]]) -> dict[bytes, str]:
    """Produce (key, value) poison into the table's topic among real changes, mirror; the
    dead-letter table's value -> error for the topic."""
    producer = Producer({"bootstrap.servers": services.KAFKA})
    for key, value in poison:
        producer.produce(m.topic, key=key, value=value)
    producer.flush(10)
    m.workload.run(50)
    settle(m)
    m.mirror()
    rows = m.spark.sql(f"SELECT error, value FROM {m.dead_letter} WHERE topic = '{m.topic}'")
    return {bytes(r.value): r.error for r in rows.collect()}


def poison_goes_to_dead_letter(m: Mirrored) -> None:
    poison = [
        (b'{"id": 1}', b"\x00not json at all"),
        (b"x", b'{"payload": {"op": "c", "after": {"id": "abc"}}}'),
    ]
    errors = poison_then_mirror(m, poison)
    for _, value in poison:
        assert errors.get(value), (value, errors)
    m.assert_same()


def malformed_events_never_wedge_or_guess(m: Mirrored) -> None:
    """Real events bent out of shape: a `schema` that is not an object, a field list that is
    not a list, and base64 that is not base64 in a decimal, a wide decimal and a bytes
    column. The batch goes on (no crash loop), nothing is read as 0 or empty: the bad
    values are dead-lettered and the table stays equal to the source."""
    m.mirror()
    real = next(
        json.loads(v)
        for _, v in reversed(services.all_records(m.topic))
        if v and json.loads(v)["payload"]["op"] in ("c", "u", "r")
    )
    bad_schema = {**real, "schema": "not a schema"}
    bad_fields = {**real, "schema": {**real["schema"], "fields": "not a list"}}
    poison: list[tuple[bytes, str | None]] = [
        (json.dumps(bad_schema).encode(), None),
        (json.dumps(bad_fields).encode(), None),
    ]
    for column in ("price", "wide", "data"):
        bent = json.loads(json.dumps(real))
        bent["payload"]["after"][column] = "!!not base64!!"
        poison.append((json.dumps(bent).encode(), column))
    errors = poison_then_mirror(m, [(b'{"id": 1}', value) for value, _ in poison])
    for value, broken in poison:
        if broken is not None:
            assert f"column {broken}: value does not convert" in (errors.get(value) or ""), (
                broken,
                errors.get(value),
            )
    m.assert_same()


def lease_held(m: Mirrored) -> bool:
    """Whether a running job holds the table's lease (its table property)."""
    from cdcmirror.catalog import load_catalog
    from cdcmirror.table_properties import LEASE_PROPERTY

    return LEASE_PROPERTY in load_catalog(m.config).load_table(m.identifier).properties


def second_job_is_refused_while(m: Mirrored, job: MirrorJob) -> None:
    """While ``job`` runs and has applied a batch: it holds the lease, and a second
    `cdcmirror mirror` on its tables is refused (exit 2, the holder named)."""
    assert lease_held(m), "the running job holds no lease"
    second = run_mirror_process(m.config_path)
    assert second.returncode == 2, second.stderr[-3000:]
    assert "is being mirrored by another cdcmirror job" in second.stderr
    assert f"pid {job.proc.pid}" in second.stderr, second.stderr[-2000:]
    job.assert_alive()


def newest_value(topic: str) -> bytes:
    """The last event value in the topic's partition 0 (a real Debezium event)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": services.KAFKA,
            "group.id": services.unique("peek"),
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        for back in range(1, 20):
            consumer.assign([TopicPartition(topic, 0, max(low, high - back))])
            message = consumer.poll(10)
            value = message.value() if message is not None else None
            if value:
                return bytes(value)
        raise AssertionError(f"no event found at the end of {topic}")
    finally:
        consumer.close()


def avro_poison_goes_to_dead_letter(m: Mirrored) -> None:
    """Values that are not Avro, name a schema id the registry lacks, or are cut short: each
    lands in the dead-letter table with its bytes and the reason; the rest applies."""
    real = newest_value(m.topic)
    assert real[0] == 0, "the connector does not write the Confluent wire format"
    poison = {
        b'{"payload": {"op": "c"}}': "not Avro in the Confluent wire format",
        b"\x00\x7f\xff\xff\xf0" + real[5:]: "schema id 2147483632 is not in the schema registry",
        real[: len(real) // 2]: "does not match schema id",
    }
    key = b"\x00\x00\x00\x00\x01\x02"
    errors = poison_then_mirror(m, [(key, value) for value in poison])
    for value, reason in poison.items():
        assert value in errors, (reason, errors)
        assert reason in errors[value], (reason, errors[value])
    m.assert_same()


def dead_letter_fail_stops_naming_the_offset(m: Mirrored) -> None:
    """``mirror.dead_letter = "fail"``: the job stops at the bad event (exit 2, the table and
    the offset named) and commits nothing; in table mode the same event is dead-lettered."""
    from support.bootstrap_env import run_cli

    poison = b"\x00poison for fail mode"
    producer = Producer({"bootstrap.servers": services.KAFKA})
    producer.produce(m.topic, key=b"k", value=poison)
    producer.flush(10)
    before = m.snapshot_ids()
    result = run_cli(
        m.config_path, "mirror", "--available-now", env={"CDCMIRROR_MIRROR__DEAD_LETTER": "fail"}
    )
    assert result.exit_code == 2, result.output
    assert m.identifier in result.output and "offset" in result.output, result.output
    assert 'mirror.dead_letter = "fail"' in result.output and "Traceback" not in result.output
    assert m.snapshot_ids() == before
    m.mirror()
    values = {
        bytes(r.value)
        for r in m.spark.sql(
            f"SELECT value FROM {m.dead_letter} WHERE topic = '{m.topic}'"
        ).collect()
    }
    assert poison in values
    m.assert_same()


BEHIND = {"CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH": "100"}  # a job's env for stop_while_behind


def stop_while_behind(m: Mirrored, job: MirrorJob, operations: int) -> None:
    """A job (started with ``BEHIND``, a 1 s trigger) given a backlog runs its batches back
    to back, 100 events a batch: SIGTERM still ends it after the running batch, exit 0, with
    events left for the next start."""
    m.workload.run(operations)
    settle(m)
    before = len(m.snapshot_ids())
    deadline = time.monotonic() + 240
    while len(m.snapshot_ids()) < before + 2:
        job.assert_alive()
        assert time.monotonic() < deadline, "the continuous job applied little in 240 s"
        time.sleep(1)
    job.proc.send_signal(signal.SIGTERM)
    try:
        job.proc.wait(timeout=90)  # a batch of 100 events takes seconds, not minutes
    except subprocess.TimeoutExpired:
        raise AssertionError("SIGTERM did not stop a job that is behind in 90 s") from None
    log = job.log.read_text(errors="replace")
    assert job.proc.returncode == 0, log[-3000:]
    assert "stopping after the current batch" in log
    assert len(m.snapshot_ids()) < before + operations // 100, "no backlog was left"
