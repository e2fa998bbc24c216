"""The recorded Debezium events (``fixtures/debezium/``) applied by the mirror's own batch
code (``spark/cdc/batch.py``: decode, dedupe, classify, MERGE, tombstones, truncate) to an
Iceberg table on a local Spark: in one batch and one event per batch, then replayed. The
table must hold what the source held after the recorded statements (the update's unchanged
TOAST value kept from the snapshot, the deleted and re-keyed rows gone, the new key there),
a replay must change nothing, and the truncate must empty it. Every format of both dialects;
no Kafka, Connect, registry or database is needed (Avro: the recorded schemas are the
registry client's cache, its URL reaches nothing)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cdcmirror.mirror.envelope import q
from cdcmirror.mirror.spec import MirrorTable
from support.golden import FIXTURES, recorded_table
from support.golden_apply import (
    NAMESPACE,
    Batches,
    applier_of,
    rows_of,
    snapshots_of,
    split_at_truncate,
)
from support.iceberg_tables import create_mirrored
from support.spark import SparkWorld


def _wanted(data: dict[str, Any]) -> dict[str, dict[str, str | None]]:
    """What the source held before its truncate: the snapshot, then each statement."""
    rows = {k: dict(v) for k, v in data["snapshot"].items()}
    for e in data["expected"]:
        if e["op"] == "d":
            rows.pop(str(e["key"]))
        elif e["op"] in ("c", "u"):
            rows[str(e["key"])] = dict(e["row"])
    return rows


def _cases() -> list[tuple[Path, bool]]:
    """Every recording in one batch; the JSON ones of each dialect also one event a batch
    (after the decode, which ``test_golden_events.py`` checks per format, the batch's work
    does not depend on the format)."""
    paths = sorted(FIXTURES.glob("*.json"))
    return [(p, False) for p in paths] + [
        (p, True) for p in paths if p.stem in ("postgresql-json", "mysql-json")
    ]


@pytest.mark.parametrize(
    ("path", "per_event"),
    _cases(),
    ids=lambda c: c.stem if isinstance(c, Path) else ("an-event-a-batch" if c else "one-batch"),
)
def test_recorded_events_applied_leave_what_the_source_held(
    spark_world: SparkWorld, path: Path, per_event: bool
) -> None:
    spark = spark_world.spark
    data = json.loads(path.read_text())
    name = f"{NAMESPACE}.{path.stem.replace('-', '_')}_{'each' if per_event else 'one'}"
    table = replace(recorded_table(data["table"]), identifier=name)
    create_mirrored(spark, table)
    applier = applier_of(spark, data, table)
    # the recording ends with the truncate: its record is the last one with a value
    assert data["expected"][-1]["op"] == "t"
    before, after = split_at_truncate(data)
    apply = Batches(spark, applier).apply

    apply(before, per_event)
    assert rows_of(spark, table) == _wanted(data)
    deleted = spark.sql(f"SELECT {q(table.key[0])} FROM {NAMESPACE}__cdcmirror.{_tomb(table)}")
    # a key deleted again has a tombstone row per delete
    assert sorted({str(r[0]) for r in deleted.collect()}) == _deleted_keys(data)
    committed = snapshots_of(spark, table)
    apply(before)  # a replay: every event is stale
    assert rows_of(spark, table) == _wanted(data)
    assert snapshots_of(spark, table) == committed, "a replay committed to the table"
    apply(after)
    assert rows_of(spark, table) == {}
    apply(before + after)  # a replay of everything, truncate included
    assert rows_of(spark, table) == {}


def _tomb(table: MirrorTable) -> str:
    return f"{table.identifier.split('.')[-1]}__deleted"


def _deleted_keys(data: dict[str, Any]) -> list[str]:
    """Keys the recorded statements deleted and did not create again."""
    wanted = _wanted(data)
    gone = {str(e["key"]) for e in data["expected"] if e["op"] == "d"}
    return sorted(k for k in gone if k not in wanted)
