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

from cdcmirror.clients.registry import SchemaRegistry
from cdcmirror.mirror.envelope import q
from cdcmirror.mirror.evolution import Evolution
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.cdc.batch import Applier, ApplierOptions, CatalogHooks
from support.golden import FIXTURES, kafka_records, recorded_table, text
from support.iceberg_tables import create_mirrored
from support.spark import SparkWorld

NAMESPACE = "golden_apply"


def _no_evolution(table: MirrorTable, evolution: Evolution) -> MirrorTable:
    raise AssertionError(f"the recorded events need no evolution of {table.identifier}")


def _applier(spark: Any, data: dict[str, Any], table: MirrorTable) -> Applier:
    registry = None
    if data["format"] == "avro":
        registry = SchemaRegistry("http://127.0.0.1:1", timeout=1, retries=())
        registry._cache.update({int(k): v for k, v in data["schemas"].items()})
    options = ApplierOptions(
        schemas=data["format"] == "json",
        soft_deletes=False,
        fail_on_dead_letter=True,  # a recorded event that cannot be applied fails the test
        internal_namespace=f"{NAMESPACE}__cdcmirror",
        registry=registry,
    )
    return Applier(spark, {table.topic: table}, options, CatalogHooks(lambda t: t, _no_evolution))


def _rows(spark: Any, table: MirrorTable) -> dict[str, dict[str, str | None]]:
    names = [c.name for c in table.columns]
    got = spark.sql(f"SELECT * FROM {table.identifier} WHERE NOT _cdc_deleted").collect()
    return {text(r[table.key[0]]) or "": {n: text(r[n]) for n in names} for r in got}


def _wanted(data: dict[str, Any]) -> dict[str, dict[str, str | None]]:
    """What the source held before its truncate: the snapshot, then each statement."""
    rows = {k: dict(v) for k, v in data["snapshot"].items()}
    for e in data["expected"]:
        if e["op"] == "d":
            rows.pop(str(e["key"]))
        elif e["op"] in ("c", "u"):
            rows[str(e["key"])] = dict(e["row"])
    return rows


def _snapshots(spark: Any, table: MirrorTable) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {table.identifier}.snapshots").first()[0])


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
    applier = _applier(spark, data, table)
    records = sorted(data["records"], key=lambda r: (r["partition"], r["offset"]))
    # the recording ends with the truncate: its record is the last one with a value
    assert data["expected"][-1]["op"] == "t"
    truncate = max(i for i, r in enumerate(records) if r["value"])
    before, after = records[:truncate], records[truncate:]
    batches = iter(range(1000))

    def apply(group: list[dict[str, Any]], one_by_one: bool = False) -> None:
        for part in [[r] for r in group] if one_by_one else [group]:
            applier.process(kafka_records(spark, part), next(batches))

    apply(before, per_event)
    assert _rows(spark, table) == _wanted(data)
    deleted = spark.sql(f"SELECT {q(table.key[0])} FROM {NAMESPACE}__cdcmirror.{_tomb(table)}")
    # a key deleted again has a tombstone row per delete
    assert sorted({str(r[0]) for r in deleted.collect()}) == _deleted_keys(data)
    committed = _snapshots(spark, table)
    apply(before)  # a replay: every event is stale
    assert _rows(spark, table) == _wanted(data)
    assert _snapshots(spark, table) == committed, "a replay committed to the table"
    apply(after)
    assert _rows(spark, table) == {}
    apply(records)  # a replay of everything, truncate included
    assert _rows(spark, table) == {}


def _tomb(table: MirrorTable) -> str:
    return f"{table.identifier.split('.')[-1]}__deleted"


def _deleted_keys(data: dict[str, Any]) -> list[str]:
    """Keys the recorded statements deleted and did not create again."""
    wanted = _wanted(data)
    gone = {str(e["key"]) for e in data["expected"] if e["op"] == "d"}
    return sorted(k for k in gone if k not in wanted)
