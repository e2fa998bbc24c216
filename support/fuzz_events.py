"""Fuzzed Debezium events: malformed and edge-case values built from a real event of a table,
each of which the mirror must dead-letter with a reason (never apply, never crash on).

Every fuzzed JSON event carries a key of its own (``first_key`` up), so one that the mirror
wrongly applied would show as an extra row in the row-by-row comparison, besides missing from
the dead letters. The kinds follow the ways a value can be wrong: not JSON or not UTF-8,
the envelope's parts missing or of the wrong type, unknown ops, and for every column whose
JSON type is not text a value of another type, out of range, or past 64 bits. (A number or
an object in a text column is read as its JSON text: Spark's JSON reader has no strict mode
for strings, so that case is not in the mix.) Avro: a bad magic byte, an unknown schema id, a
body cut short, an empty body.
"""

from __future__ import annotations

import base64
import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdcmirror.mirror.carriers import parse_carrier, wire_type
from cdcmirror.mirror.spec import MirrorTable

NAN = "__NaN__"  # replaced by the bare NaN token after json.dumps


@dataclass(frozen=True)
class Bad:
    value: bytes
    kind: str


def _wrong_values(wire: str) -> list[Any]:
    """Values of the wrong JSON type or out of range for a column read as ``wire``."""
    if wire == "bigint":
        return ["abc", "12", 1.5, 10**30, -(10**25), {"x": 1}, [1], True, NAN, "x" * 100_000]
    if wire == "double":
        return ["abc", {"x": 1}, [1.0], True, "1e5x"]
    if wire == "boolean":
        return ["abc", 7, {"x": 1}, [True], "true"]
    if wire.startswith("array<"):
        return ["abc", 5, {"x": 1}, [{"x": 1}]] if "string" not in wire else [5, {"x": 1}]
    if wire.startswith("map<"):
        return ["abc", 5, [1, 2]]
    if wire.startswith("struct<"):
        return ["abc", 5, [1]]
    return []


def _base64_values(iceberg: str) -> list[Any]:
    """Bad bytes for a column carried as base64 text (bytes, decimals). A decimal stored as
    text (precision past 38) has no bound the mirror knows, so no value is too long there."""
    out: list[Any] = ["!!not base64!!", "QUJD=====", 5]
    if iceberg.startswith("decimal"):
        out += [base64.b64encode(bytes(range(40))).decode(), ""]  # past any decimal(38); no bytes
    return out


def _column_mutations(table: MirrorTable) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for c in table.columns:
        carrier = parse_carrier(c.carrier)
        wire = wire_type(carrier)
        values = _wrong_values(wire)
        if carrier.kind == "bytes":
            values = _base64_values(c.iceberg)
        if c.carrier.endswith("io.debezium.time.Date"):
            values = [*values, 10**12, -(10**12)]  # days past any date
        if c.carrier.endswith("io.debezium.time.Timestamp"):  # milliseconds
            values = [*values, 10**17]  # past 64 bits as microseconds
        if c.iceberg == "float":
            values = [*values, 1e300]  # a double no float holds
        out += [(c.name, v) for v in values]
    return out


def _payload(event: dict[str, Any], schemas: bool) -> dict[str, Any]:
    return event["payload"] if schemas else event


def _dump(event: Any) -> bytes:
    return json.dumps(event).replace(f'"{NAN}"', "NaN").encode()


def json_fuzz(
    real: dict[str, Any], table: MirrorTable, schemas: bool, count: int, seed: int, first_key: int
) -> list[Bad]:
    """``count`` bad values from the real event ``real`` (a create or update)."""
    rnd = random.Random(seed)
    key = table.key[0]
    columns = _column_mutations(table)

    def fresh(n: int) -> dict[str, Any]:
        event = copy.deepcopy(real)
        p = _payload(event, schemas)
        p["op"] = "c"
        p["before"] = None
        p["after"][key] = first_key + n
        return event

    def column(event: dict[str, Any]) -> tuple[dict[str, Any], str]:
        name, value = rnd.choice(columns)
        _payload(event, schemas)["after"][name] = value
        return event, f"column {name}: {json.dumps(value)[:60]}"

    def envelope(event: dict[str, Any]) -> tuple[Any, str]:
        p = _payload(event, schemas)
        kind = rnd.choice(
            ["no op", "no source", "no after", "delete without before", "unknown op",
             "op of the wrong type", "after a scalar", "source of the wrong type",
             "position text", "ts_ms text", "key null", "no key field", "payload a list",
             "empty object", "a JSON array", "a JSON string"]
        )  # fmt: skip
        if kind == "no op":
            del p["op"]
        elif kind == "no source":
            del p["source"]
        elif kind == "no after":
            del p["after"]
        elif kind == "delete without before":
            p["op"], p["before"] = "d", None
        elif kind == "unknown op":
            p["op"] = rnd.choice(["x", "", "U", "cc", "delete"])
        elif kind == "op of the wrong type":
            p["op"] = rnd.choice([5, {"op": "c"}, ["c"], True])
        elif kind == "after a scalar":
            p["after"] = rnd.choice([5, "row", [1, 2]])
        elif kind == "source of the wrong type":
            p["source"] = rnd.choice(["pg", 5, [1]])
        elif kind == "position text":
            position = "lsn" if "lsn" in p["source"] else "pos"
            p["source"][position] = "abc"
        elif kind == "ts_ms text":
            p["source"]["ts_ms"] = "yesterday"
        elif kind == "key null":
            p["after"][key] = None
        elif kind == "no key field":
            del p["after"][key]
        elif kind == "payload a list":
            return ({"schema": event.get("schema"), "payload": [p]} if schemas else [p]), kind
        elif kind == "empty object":
            return {}, kind
        elif kind == "a JSON array":
            return [event], kind
        else:
            return "a Debezium event", kind
        return event, kind

    def broken(event: dict[str, Any]) -> tuple[bytes, str]:
        text = _dump(event)
        if rnd.random() < 0.5:
            return text[: rnd.randint(1, len(text) - 2)], "truncated JSON"
        at = text.index(b'"', text.index(b'"after"') + 9)  # inside a string of the row
        return text[: at + 1] + rnd.choice([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80"]) + text[
            at + 1 :
        ], "not UTF-8"

    makers: list[Callable[[dict[str, Any]], tuple[Any, str]]] = [column, column, envelope]
    out: list[Bad] = []
    for n in range(count):
        event = fresh(n)
        if rnd.random() < 0.15:
            value, kind = broken(event)
            out.append(Bad(value, kind))
            continue
        made, kind = rnd.choice(makers)(event)
        out.append(Bad(_dump(made), kind))
    return out


def avro_fuzz(reals: list[bytes], count: int, seed: int) -> list[Bad]:
    """``count`` bad values from real values in the Confluent wire format."""
    rnd = random.Random(seed)
    out: list[Bad] = []
    for n in range(count):
        real = rnd.choice(reals)
        kind = rnd.choice(["magic", "schema id", "truncated", "empty body", "only magic"])
        if kind == "magic":
            value = bytes([rnd.randint(1, 255)]) + real[1:]
        elif kind == "schema id":
            value = b"\x00" + (2**31 - 1 - n).to_bytes(4, "big") + real[5:]
        elif kind == "truncated":
            value = real[: rnd.randint(6, len(real) - 1)]
        elif kind == "empty body":
            value = real[:5]
        else:
            value = b"\x00"
        out.append(Bad(value, kind))
    return out
