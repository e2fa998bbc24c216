"""Reading Debezium JSON-converter records in tests (the applier's decoder comes later)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


def payload(raw: bytes | None) -> dict[str, Any] | None:
    """The ``payload`` of a JSON-with-schema record; None for a tombstone."""
    if raw is None:
        return None
    body: dict[str, Any] = json.loads(raw)
    found: dict[str, Any] | None = body["payload"]
    return found


def decimal_field(raw_value: bytes, field: str, b64: str) -> Decimal:
    """Decode a Debezium ``precise`` decimal: big-endian two's complement bytes + schema scale."""
    schema = json.loads(raw_value)["schema"]
    after = next(f for f in schema["fields"] if f["field"] in ("after", "before"))
    spec = next(f for f in after["fields"] if f["field"] == field)
    scale = int(spec["parameters"]["scale"])
    unscaled = int.from_bytes(base64.b64decode(b64), "big", signed=True)
    return Decimal(unscaled).scaleb(-scale)


# (op, key id, after.name) per record, in order; None op = the tombstone after a delete.
WORKLOAD_EXPECTED = [
    ("r", 1, "seed"),
    ("c", 2, "second"),
    ("u", 1, "seed updated"),
    ("d", 2, None),
    (None, 2, None),
]


def run_workload(execute: Callable[[str], object], table: str) -> None:
    """Insert, update, delete after the snapshot: the same statements on both dialects."""
    execute(f"INSERT INTO {table} (id, name, amount) VALUES (2, 'second', 12.34)")
    execute(f"UPDATE {table} SET name = 'seed updated', amount = 99999999.99 WHERE id = 1")
    execute(f"DELETE FROM {table} WHERE id = 2")


@dataclass
class ChangeTopic:
    connector: str
    topic: str
    records: list[tuple[bytes | None, bytes | None]]
