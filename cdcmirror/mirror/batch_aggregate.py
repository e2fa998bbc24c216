"""What one pass over a table's decoded events of a batch tells the applier: the counts, the
commit-time bounds, the batch's newest TRUNCATE and the key bounds (``key_range.py``).

Pure SQL text: the aggregate is observed by the job that keeps the decoded events
(``spark/kept.py``), so no Spark job of its own reads them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cdcmirror.mirror.evolution import NEW_SCHEMA
from cdcmirror.mirror.key_change import applied_count_sql, applied_deletes_sql
from cdcmirror.mirror.key_range import bounds_exprs
from cdcmirror.mirror.positions import behind_truncate_sql, source_length
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast import placeholder_sql
from cdcmirror.mirror.toast_chain import key_change_with_placeholders
from cdcmirror.sql_text import median_sql

_TS = "IF(_cdc_error IS NULL, unix_micros(_cdc_source_ts), NULL)"
_TRUNCATE = "_cdc_error IS NULL AND _cdc_op = 't'"
_CHANGE = "_cdc_error IS NULL AND _cdc_op IN ('c', 'u', 'd', 'r')"
_POSITIONS = ("oldest_position", "newest_position", "truncated_at")  # JSON text in the row


def aggregate_exprs(table: MirrorTable) -> list[str]:
    """The aggregate's columns, each ``expr AS name``: numbers only (an observed metric comes
    back to Python as it is, so the TRUNCATE's position array travels as JSON text)."""
    n = source_length(table.dialect)
    return [
        "count(*) AS events",
        f"count_if(_cdc_error = '{NEW_SCHEMA}') AS new_schemas",
        "count_if(_cdc_error IS NOT NULL) AS bad",
        f"max({_TS}) AS newest_us",
        f"{median_sql(_TS)} AS median_us",
        f"min({_TS}) AS oldest_us",
        f"to_json(max(IF({_TRUNCATE}, _cdc_position, NULL))) AS truncated_at",
        f"max_by(IF({_TRUNCATE}, unix_micros(_cdc_source_ts), NULL), "
        f"IF({_TRUNCATE}, _cdc_position, NULL)) AS truncated_ts",
        f"{behind_truncate_sql(table.truncated_at, table.truncated_ts_us, n)} AS behind_truncate",
        f"count_if({_TRUNCATE}) AS truncates",
        f"{applied_count_sql(table)} AS applied",
        f"count_if(_cdc_error IS NULL AND {key_change_with_placeholders(table)}) "
        "AS key_change_fills",
        f"{applied_deletes_sql(table)} AS deletes",
        f"count_if({_CHANGE} AND _cdc_op IN ('c', 'r')) AS creates",
        f"count_if({_CHANGE} AND {placeholder_sql(table)}) AS placeholders",
        f"to_json(min(IF({_CHANGE}, slice(_cdc_position, 1, {n}), NULL))) AS oldest_position",
        f"to_json(max(IF({_CHANGE}, slice(_cdc_position, 1, {n}), NULL))) AS newest_position",
        *bounds_exprs(table),
    ]


def read_aggregate(values: Mapping[str, Any]) -> dict[str, Any]:
    """The aggregate's values as the applier reads them: the TRUNCATE's position and the
    source parts of the oldest and newest change lists.

    >>> read_aggregate({"events": 3, "truncated_at": "[1,2,30,0]"})["truncated_at"]
    [1, 2, 30, 0]
    >>> read_aggregate({"events": 3, "truncated_at": None})["truncated_at"] is None
    True
    >>> read_aggregate({"oldest_position": "[1,5,6]"})["oldest_position"]
    [1, 5, 6]
    """
    out = dict(values)
    for name in _POSITIONS:
        text = values.get(name)
        out[name] = None if text is None else json.loads(text)
    return out
