"""What one pass over a table's decoded events of a batch tells the applier: the counts, the
commit-time bounds, the batch's newest TRUNCATE and the key bounds (``key_range.py``).

Pure SQL text: the aggregate is observed by the job that keeps the decoded events
(``spark/cdc/decode.py``), so no Spark job of its own reads them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from cdcmirror.mirror.evolution import NEW_SCHEMA
from cdcmirror.mirror.key_change import applied_count_sql, applied_deletes_sql
from cdcmirror.mirror.key_range import bounds_exprs
from cdcmirror.mirror.positions import behind_truncate_sql, reread_sql, source_length
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
        f"count_if({_CHANGE} AND {reread_sql()}) AS rereads",
        f"to_json(min(IF({_CHANGE}, slice(_cdc_position, 1, {n}), NULL))) AS oldest_position",
        f"to_json(max(IF({_CHANGE}, slice(_cdc_position, 1, {n}), NULL))) AS newest_position",
        *bounds_exprs(table),
    ]


@dataclass(frozen=True)
class BatchAggregate:
    """The aggregate's values (``aggregate_exprs``), as the applier reads them."""

    events: int = 0
    new_schemas: int = 0  # events of a row schema the job has not applied (a batch read once)
    bad: int = 0  # events with a decode error (dead letters)
    newest_us: int | None = None  # the source commit times of the applicable events
    median_us: int | None = None
    oldest_us: int | None = None
    truncated_at: list[int] | None = None  # the batch's newest TRUNCATE
    truncated_ts: int | None = None  # its commit time, epoch microseconds
    behind_truncate: int = 0  # events of a restarted source history, by the truncate mark
    truncates: int = 0
    applied: int = 0  # events that change rows
    key_change_fills: int = 0  # key-change creates with unchanged TOAST placeholders
    deletes: int = 0
    creates: int = 0  # creates and snapshot reads
    placeholders: int = 0  # changes with an unchanged TOAST placeholder
    rereads: int = 0  # snapshot reads made while the table streams (``repair``)
    oldest_position: list[int] | None = None  # the source parts of the oldest change ...
    newest_position: list[int] | None = None  # ... and of the newest
    bounds: Mapping[str, object] = field(default_factory=dict)  # ``key_range.bounds_exprs``

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> BatchAggregate:
        """The aggregate from its values by name (positions come as JSON text).

        >>> BatchAggregate.of({"events": 3, "truncated_at": "[1,2,30,0]"}).truncated_at
        [1, 2, 30, 0]
        >>> BatchAggregate.of({"events": 3, "truncated_at": None}).truncated_at is None
        True
        >>> BatchAggregate.of({"_cdc_lo_id": 3}).bounds
        {'_cdc_lo_id': 3}
        """
        names = {f.name for f in fields(cls)} - {"bounds"}
        known: dict[str, Any] = {k: v for k, v in values.items() if k in names}
        for name in _POSITIONS:
            text = known.get(name)
            known[name] = None if text is None else [int(x) for x in json.loads(text)]
        for name, value in list(known.items()):
            if name not in _POSITIONS and value is None and name not in _MAYBE_NONE:
                known[name] = 0
        bounds = {k: v for k, v in values.items() if k not in names}
        return cls(**known, bounds=bounds)


_MAYBE_NONE = ("newest_us", "median_us", "oldest_us", "truncated_ts")
