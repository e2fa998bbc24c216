"""Runs the TOAST key-chain walk (``mirror/toast_chain.py``) on a batch's deduplicated rows.

Only rows with a placeholder left and a chain link to follow take part; each step is one
join against the batch's events, and the loop ends when no row has a link left (a chain is
never longer than the batch, and every step goes strictly back in position).
"""

from __future__ import annotations

from typing import Any

from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast_chain import (
    MAX_CHAIN_STEPS,
    chain_columns,
    chain_end_fill_sql,
    chain_step_sql,
    pending_sql,
)


def fill_key_chains(
    spark: Any, table: MirrorTable, deduped: Any, events_view: str, target: str, view: str
) -> Any:
    """``deduped`` with every placeholder filled that the chain or a stored row can fill."""
    cols = chain_columns(table)
    deduped = deduped.select(*cols)
    pending = deduped.where(pending_sql(table))
    done = deduped.where(f"NOT {pending_sql(table)}")
    ended = []
    steps = 0
    while steps < MAX_CHAIN_STEPS:
        steps += 1
        pending.createOrReplaceTempView(view + "_pending")
        stepped = spark.sql(chain_step_sql(table, view + "_pending", events_view)).select(*cols)
        stepped = stepped.localCheckpoint(eager=True)  # cut the lineage of the walk
        ended.append(stepped.where(f"NOT {pending_sql(table)}"))
        pending = stepped.where(pending_sql(table))
        if pending.isEmpty():
            break
    spark.catalog.dropTempView(view + "_pending")
    if not ended:
        return done
    walked = ended[0]
    for frame in ended[1:]:
        walked = walked.unionByName(frame)
    walked.createOrReplaceTempView(view + "_walked")
    filled = spark.sql(chain_end_fill_sql(table, view + "_walked", target)).select(*cols)
    return done.unionByName(filled)
