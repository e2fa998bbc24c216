"""Runs the TOAST key-chain walk (``mirror/toast_chain.py``) on a batch's deduplicated rows.

Only rows with a placeholder left and a chain link to follow take part: first against their
own stored row, then one step per link, each a join against the batch's events and the
stored rows; the loop ends when no row has a link left (a chain is
never longer than the batch, and every step goes strictly back in position).
"""

from __future__ import annotations

from typing import Any

from cdcmirror.mirror.key_range import Bounds
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast_chain import (
    MAX_CHAIN_STEPS,
    chain_columns,
    chain_step_sql,
    own_stored_fill_sql,
    pending_sql,
)


def fill_key_chains(
    spark: Any,
    table: MirrorTable,
    deduped: Any,
    events_view: str,
    target: str,
    view: str,
    soft: bool,
    bounds: Bounds,
) -> Any:
    """``deduped`` with every placeholder filled that the chain or a stored row can fill."""
    cols = chain_columns(table)
    deduped = deduped.select(*cols)
    pending = deduped.where(pending_sql(table))
    done = [deduped.where(f"NOT {pending_sql(table)}")]
    if pending.isEmpty():
        return done[0]
    pending.createOrReplaceTempView(view + "_pending")
    own = spark.sql(own_stored_fill_sql(table, view + "_pending", target, soft, bounds))
    pending = own.select(*cols).localCheckpoint(eager=True)
    done.append(pending.where(f"NOT {pending_sql(table)}"))
    pending = pending.where(pending_sql(table))
    steps = 0
    while steps < MAX_CHAIN_STEPS and not pending.isEmpty():
        steps += 1
        pending.createOrReplaceTempView(view + "_pending")
        sql = chain_step_sql(table, view + "_pending", events_view, target, soft, bounds)
        stepped = spark.sql(sql).select(*cols).localCheckpoint(eager=True)  # cut the lineage
        done.append(stepped.where(f"NOT {pending_sql(table)}"))
        pending = stepped.where(pending_sql(table))
    spark.catalog.dropTempView(view + "_pending")
    out = done[0]
    for frame in done[1:]:
        out = out.unionByName(frame)
    return out
