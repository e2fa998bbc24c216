"""The recorded Debezium events (``golden.py``) applied by the mirror's own batch code on a
local Spark: the applier the tests make, and what they read back."""

from __future__ import annotations

from typing import Any

from cdcmirror.clients.registry import SchemaRegistry
from cdcmirror.mirror.evolution import Evolution
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.cdc.batch import Applier, ApplierOptions, CatalogHooks
from support.golden import text

NAMESPACE = "golden_apply"


def _no_evolution(table: MirrorTable, evolution: Evolution) -> MirrorTable:
    raise AssertionError(f"the recorded events need no evolution of {table.identifier}")


def applier_of(spark: Any, data: dict[str, Any], table: MirrorTable, soft: bool = False) -> Applier:
    """The mirror's applier of the recording's ``table`` (``soft``: soft deletes)."""
    registry = None
    if data["format"] == "avro":
        registry = SchemaRegistry("http://127.0.0.1:1", timeout=1, retries=())
        registry._cache.update({int(k): v for k, v in data["schemas"].items()})
    options = ApplierOptions(
        schemas=data["format"] == "json",
        soft_deletes=soft,
        fail_on_dead_letter=True,  # a recorded event that cannot be applied fails the test
        internal_namespace=f"{NAMESPACE}__cdcmirror",
        registry=registry,
    )
    return Applier(spark, {table.topic: table}, options, CatalogHooks(lambda t: t, _no_evolution))


def rows_of(spark: Any, table: MirrorTable) -> dict[str, dict[str, str | None]]:
    names = [c.name for c in table.columns]
    got = spark.sql(f"SELECT * FROM {table.identifier} WHERE NOT _cdc_deleted").collect()
    return {text(r[table.key[0]]) or "": {n: text(r[n]) for n in names} for r in got}


def snapshots_of(spark: Any, table: MirrorTable) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {table.identifier}.snapshots").first()[0])


Records = list[dict[str, Any]]


def split_at_truncate(data: dict[str, Any]) -> tuple[Records, Records]:
    """The recording's records in order, before its TRUNCATE (the last record with a value)
    and from it on."""
    records = sorted(data["records"], key=lambda r: (r["partition"], r["offset"]))
    truncate = max(i for i, r in enumerate(records) if r["value"])
    return records[:truncate], records[truncate:]


class Batches:
    """Records handed to an applier as micro-batches, numbered from 0."""

    def __init__(self, spark: Any, applier: Applier) -> None:
        self.spark, self.applier, self.next = spark, applier, 0

    def apply(self, group: Records, one_by_one: bool = False) -> None:
        from support.golden import kafka_records

        for part in [[r] for r in group] if one_by_one else [group]:
            self.applier.process(kafka_records(self.spark, part), self.next)
            self.next += 1
