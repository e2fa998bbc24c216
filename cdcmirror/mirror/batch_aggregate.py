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
from cdcmirror.mirror.key_change import applied_count_sql
from cdcmirror.mirror.key_range import bounds_exprs
from cdcmirror.mirror.mariadb_uuid import suspect_sql
from cdcmirror.mirror.positions import behind_truncate_sql, source_length
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast_chain import key_change_with_placeholders
from cdcmirror.sql_text import median_sql

_TS = "IF(_cdc_error IS NULL, unix_micros(_cdc_source_ts), NULL)"
_TRUNCATE = "_cdc_error IS NULL AND _cdc_op = 't'"


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
        *bounds_exprs(table),
        f"count_if(_cdc_error IS NULL AND ({suspect_sql(table) or 'false'})) AS suspect_uuids",
    ]


def read_aggregate(values: Mapping[str, Any]) -> dict[str, Any]:
    """The aggregate's values as the applier reads them: the TRUNCATE's position a list.

    >>> read_aggregate({"events": 3, "truncated_at": "[1,2,30,0]"})["truncated_at"]
    [1, 2, 30, 0]
    >>> read_aggregate({"events": 3, "truncated_at": None})["truncated_at"] is None
    True
    """
    mark = values.get("truncated_at")
    return {**values, "truncated_at": None if mark is None else json.loads(mark)}
