"""The mirror's stop when changes of a restarted source history meet stored rows (the rule:
``mirror/positions.py``, ``went_backwards_sql``; the classification marks them
``_cdc_backwards``)."""

from __future__ import annotations

from typing import Any

from cdcmirror.mirror.envelope import q
from cdcmirror.mirror.positions import history_restarted_message
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.sql_text import sql_string


def history_restarted(table: MirrorTable, changes: Any, backwards: int) -> str:
    """The stop message, with one of the changes: its key, position and commit time, and
    those of what is stored. ``backwards``: how many changes are marked ``_cdc_backwards``."""
    key = ", ".join(f"concat({sql_string(k + '=')}, CAST({q(k)} AS STRING))" for k in table.key)
    first = (
        changes.where("_cdc_backwards")
        .selectExpr(
            f"concat_ws(', ', {key}) AS k",
            "_cdc_position",
            "CAST(_cdc_source_ts AS STRING) AS ts",
            "_cdc_stored_position",
            "CAST(_cdc_stored_ts AS STRING) AS stored_ts",
        )
        .first()
    )
    example = (
        f"e.g. {first.k}: position {list(first._cdc_position)} committed {first.ts}, "
        f"stored at {list(first._cdc_stored_position)} committed {first.stored_ts}"
    )
    return history_restarted_message(table.identifier, backwards, example)
