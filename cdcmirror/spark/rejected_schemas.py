"""The events of row schemas a table cannot take (``spark/batch_evolution.py`` says which
and why): dead-lettered with the reason, so the table's other events still apply. After
the table is fixed, `cdcmirror replay-dead-letters` applies them through the position
guard, so changes applied meanwhile that are newer stay."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cdcmirror.mirror.evolution import schema_key_sql
from cdcmirror.mirror.spec import MirrorTable

if TYPE_CHECKING:
    from cdcmirror.spark.batch_stats import TableStats


def reject_schemas(
    events: Any,
    kind: str,
    table: MirrorTable,
    rejected: dict[str, str],
    raw_dead: Callable[[Any, str, MirrorTable], Any],
    stats: TableStats,
) -> tuple[tuple[Any, int] | None, Any]:
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
