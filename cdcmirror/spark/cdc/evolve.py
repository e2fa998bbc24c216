"""Evolve a table to every distinct row schema of its events in a batch, or say which
schemas it cannot take and why (``mirror/evolution.py`` decides; this module fetches and
applies). The events of a rejected schema are dead-lettered with the reason and the others
apply (:func:`reject_schemas`); without schemas (JSON schemaless) the whole table stops for
the batch. After the table is fixed, `cdcmirror replay-dead-letters` applies them through
the position guard, so changes applied meanwhile that are newer stay.

The schemas come from the batch summary (``evolution.distinct_schemas_sql``): JSON schema
parts, Avro schema ids (fetched from the registry) or schemaless field-name lists.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdcmirror.mirror.avro import AvroDecodeError, WriterSchemas, connect_schema
from cdcmirror.mirror.carriers import CarrierError
from cdcmirror.mirror.evolution import (
    Evolution,
    field_names,
    json_schema_fields,
    plan_evolution,
    row_fields,
    schema_carriers,
    schema_key,
    schema_key_sql,
    unknown_names,
)
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.stats import TableStats
from cdcmirror.spark.dead_letters import raw_dead

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

logger = logging.getLogger("cdcmirror.mirror")


Fields = list[dict[str, Any]] | str | None  # a schema's row fields, why it is unreadable, or
# None (not a schema: the decoder judges its events)


@dataclass
class Verdict:
    table: MirrorTable  # after the evolutions
    stop: str | None = None  # why every event of the table waits (schemaless)
    rejected: dict[str, str] = field(default_factory=dict)  # schema key -> why
    # schema key -> the carriers its events decode with, where the columns' differ
    # (``evolution.schema_carriers``)
    carriers: dict[str, dict[str, str]] = field(default_factory=dict)


class BatchEvolution:
    def __init__(
        self,
        kind: str,  # avro, json or schemaless
        registry: WriterSchemas | None,
        reload: Callable[[MirrorTable], MirrorTable],
        evolve: Callable[[MirrorTable, Evolution], MirrorTable],
    ) -> None:
        """``reload`` and ``evolve``: the catalog's (``commands/mirror.CatalogAccess``)."""
        self.kind = kind
        self.registry = registry
        self.reload = reload
        self.evolve = evolve

    def apply(self, table: MirrorTable, schemas: list[str]) -> Verdict:
        """The table after evolving it to each schema it can take; the others, and why."""
        if self.kind == "schemaless":
            table, stop = self._schemaless(table, schemas)
            return Verdict(table, stop)
        verdict = Verdict(table)
        lists = self._field_lists(schemas)
        for key, fields in lists:
            if isinstance(fields, str):
                verdict.rejected[key] = fields
                continue
            verdict.table, error = self._evolve_to(verdict.table, fields)
            if error:
                verdict.rejected[key] = error
        for key, fields in lists:  # each schema's encodings, against the evolved table
            if isinstance(fields, list) and key not in verdict.rejected:
                self._carriers_of(verdict, key, fields)
        return verdict

    def _carriers_of(self, verdict: Verdict, key: str, fields: list[dict[str, Any]]) -> None:
        try:
            carriers, errors = schema_carriers(verdict.table, fields)
        except (CarrierError, TypeError, ValueError, KeyError, AttributeError):
            return  # a malformed event schema: its event is judged by the decoder
        if errors:
            verdict.rejected[key] = "; ".join(errors)
        elif carriers:
            verdict.carriers[key] = carriers

    def _field_lists(self, schemas: list[str]) -> list[tuple[str, Fields]]:
        if self.kind == "json":
            return [(schema_key("json", s), json_schema_fields(str(s))) for s in sorted(schemas)]
        assert self.registry is not None
        ids = sorted(int(s) for s in schemas)
        texts = self.registry.schemas(ids)
        out: list[tuple[str, Fields]] = []
        for sid in ids:
            if sid not in texts:
                continue  # an unknown id: its events are dead-lettered by the decoder
            key = schema_key("avro", sid)
            try:
                out.append((key, row_fields(connect_schema(json.loads(texts[sid])))))
            except (AvroDecodeError, ValueError) as exc:
                out.append((key, f"its Avro schema (id {sid}) cannot be read: {exc}"))
        return out

    def _evolve_to(
        self, table: MirrorTable, fields: list[dict[str, Any]] | None
    ) -> tuple[MirrorTable, str | None]:
        if fields is None:
            return table, None
        try:
            evo = plan_evolution(table, fields)
        except (CarrierError, TypeError, ValueError, KeyError, AttributeError) as exc:
            # a malformed event schema: its event is judged by the decoder (dead letter)
            logger.warning("%s: an event schema cannot be read: %s", table.identifier, exc)
            return table, None
        if evo.errors:
            return table, "; ".join(evo.errors)
        if evo.changes:
            table = self.evolve(table, evo)
        return table, None

    def _schemaless(self, table: MirrorTable, schemas: list[str]) -> tuple[MirrorTable, str | None]:
        if not schemas:
            return table, None
        # the events do not say their types: `cdcmirror bootstrap` may have widened or added
        # columns since the last batch, so the batch decodes with the table as it is now
        table = self.reload(table)
        names = sorted({n for s in schemas for n in field_names(str(s))})
        missing = unknown_names(table, names)
        if missing:
            return table, (
                f"the events have column(s) {', '.join(missing)} that the Iceberg table lacks; "
                "JSON without schemas does not say their types: run `cdcmirror bootstrap` to "
                "add them"
            )
        return table, None


def reject_schemas(
    events: DataFrame,
    kind: str,
    table: MirrorTable,
    rejected: Mapping[str, str],
    stats: TableStats,
) -> tuple[tuple[DataFrame, int] | None, DataFrame]:
    """The dead letters of ``rejected`` (schema key -> why) and how many, and the other
    events; ``stats.stopped`` names the reasons."""
    if not rejected:
        return None, events
    key = schema_key_sql(kind)
    dead = None
    for schema, why in sorted(rejected.items()):
        error = (
            f"its schema cannot be applied: {why}. Fix the table (e.g. `cdcmirror bootstrap`), "
            "then `cdcmirror replay-dead-letters`"
        )
        frame = raw_dead(events.where(f"{key} = '{schema}'"), error, table)
        dead = frame if dead is None else dead.unionByName(frame)
    assert dead is not None
    dead = dead.localCheckpoint(eager=True)
    reasons = "; ".join(sorted(rejected.values()))
    stats.stopped = f"events of {len(rejected)} schema(s) dead-lettered: {reasons}"
    keys = ", ".join(f"'{k}'" for k in rejected)
    return (dead, dead.count()), events.where(f"NOT ({key} IN ({keys}))")
