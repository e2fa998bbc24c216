"""What `cdcmirror repair` asks for, as plain data: the keys from a reconcile report, the
SQL filter that selects them at the source, and Debezium's execute-snapshot signal. Pure."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from cdcmirror.exceptions import ConfigError
from cdcmirror.reconcile.canonical import CanonicalColumn, RowShape, joined, quote, string_literal

_NUMBER = re.compile(r"-?\d+(\.\d+)?")
SIGNAL_TYPE = "execute-snapshot"


@dataclass
class RepairKeys:
    reread: list[dict[str, str]] = field(default_factory=list)  # changed or missing
    extra: list[dict[str, str]] = field(default_factory=list)  # in the mirror only


def keys_from_report(report: Any, identifier: str, origin: str) -> RepairKeys:
    """The drifted keys of one table from ``reconcile --deep --output json``."""
    tables = report.get("tables") if isinstance(report, dict) else None
    if not isinstance(tables, list):
        raise ConfigError(
            f"{origin} is not a reconcile report; write one with "
            "`cdcmirror reconcile --deep --output json > FILE`"
        )
    for t in tables:
        if t.get("table") == identifier:
            deep = t.get("deep")
            if not deep:
                raise ConfigError(
                    f"{origin} has no --deep result for {identifier}; run "
                    "`cdcmirror reconcile --deep --output json` to list the keys"
                )
            if deep.get("keys_truncated"):
                raise ConfigError(
                    f"{origin} lists only part of the drifted keys of {identifier}; raise "
                    "reconcile.max_keys and reconcile again, or repair without --keys-from"
                )
            return RepairKeys(
                reread=list(deep.get("changed_keys", [])) + list(deep.get("missing_keys", [])),
                extra=list(deep.get("extra_keys", [])),
            )
    raise ConfigError(f"{origin} has no entry for table {identifier}")


def _condition(engine: str, col: CanonicalColumn, text: str) -> str:
    """``column = value`` in a form an index can use where the canonical text is the value
    itself; otherwise the canonical expression compared with the text."""
    if col.family in ("int", "decimal") and _NUMBER.fullmatch(text):
        return f"{quote(engine, col.name)} = {text}"
    if col.family == "text" and engine != "spark":
        return f"{quote(engine, col.name)} = {string_literal(engine, text)}"
    return f"{joined(engine, [col])} = {string_literal(engine, text)}"


def key_filter(engine: str, shape: RowShape, keys: list[dict[str, str]]) -> str:
    """A WHERE fragment matching exactly the listed keys (``engine``: postgresql, mysql or
    spark)."""
    columns = shape.key or shape.columns
    missing = [c.name for c in columns if any(c.name not in k for k in keys)]
    if missing:
        raise ConfigError(f"the report's keys lack column(s) {', '.join(sorted(set(missing)))}")
    if len(columns) == 1 and columns[0].family == "int":
        col = columns[0]
        values = [k[col.name] for k in keys]
        if all(_NUMBER.fullmatch(v) for v in values):
            return f"{quote(engine, col.name)} IN ({', '.join(values)})"
    parts = [
        "(" + " AND ".join(_condition(engine, c, k[c.name]) for c in columns) + ")" for k in keys
    ]
    return " OR ".join(parts)


def snapshot_signal(data_collection: str, condition: str | None) -> str:
    """The ``data`` of an incremental ``execute-snapshot`` signal for one table.

    >>> json.loads(snapshot_signal("public.t", "id IN (1)"))["additional-conditions"]
    [{'data-collection': 'public.t', 'filter': 'id IN (1)'}]
    """
    data: dict[str, Any] = {"data-collections": [data_collection], "type": "incremental"}
    if condition:
        data["additional-conditions"] = [{"data-collection": data_collection, "filter": condition}]
    return json.dumps(data)
