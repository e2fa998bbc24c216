"""PostgreSQL's unchanged-TOAST placeholders, as Debezium writes them per type. Pure.

An UPDATE that leaves an out-of-line (TOASTed) value unchanged does not log it, and Debezium
puts a placeholder in its place, shaped for the column's type (Debezium's
``UnchangedToastedPlaceholder``, ``unavailable.value.placeholder`` left at its default):

- text, json, xml, ...: the string ``__debezium_unavailable_value``; bytea: its bytes;
- text[] / bytea[]: a one-element array of that string / those bytes;
- integer[] / bigint[]: the placeholder's bytes as numbers (95, 95, 100, ...);
- uuid[]: a one-element array of the name-based UUID of the placeholder's bytes;
- hstore (map mode): the one entry placeholder -> placeholder.

The mirror keeps the stored value for each of these and never writes the placeholder
(DESIGN.md rule 4): the decode flags a placeholder in ``_cdc_t_<column>`` (``envelope.py``), the
batch's dedupe fills it from an earlier event of the key (``filled_sql``), the MERGE keeps
the stored value (``kept_sql``), and ``toast_chain.py`` follows key changes.
"""

from __future__ import annotations

import base64
import hashlib
import uuid

from cdcmirror import dialects
from cdcmirror.cdc_columns import fill, placeholder_flag
from cdcmirror.mirror.carriers import Carrier, parse_carrier
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.sql_text import q

UNAVAILABLE = "__debezium_unavailable_value"
UNAVAILABLE_B64 = base64.b64encode(UNAVAILABLE.encode()).decode()
UUID_NAME = "io.debezium.data.Uuid"
_INTS = ("int16", "int32", "int64")


def name_uuid(data: bytes) -> str:
    """Java's ``UUID.nameUUIDFromBytes``: MD5, version 3, IETF variant.

    >>> name_uuid(b"")
    'd41d8cd9-8f00-3204-a980-0998ecf8427e'
    """
    digest = bytearray(hashlib.md5(data, usedforsecurity=False).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))


UNAVAILABLE_UUID = name_uuid(UNAVAILABLE.encode())
UNAVAILABLE_NUMBERS = "array(" + ", ".join(str(b) for b in UNAVAILABLE.encode()) + ")"


def unavailable_sql(w: str, carrier: Carrier) -> str | None:
    """True when the wire value ``w`` is the placeholder; None when this carrier cannot
    carry one (fixed-width values are never TOASTed).

    >>> from cdcmirror.mirror.carriers import parse_carrier
    >>> unavailable_sql("w", parse_carrier("array<int32>")).startswith("(w <=> array(95, 95,")
    True
    >>> unavailable_sql("w", parse_carrier("int64")) is None
    True
    """
    if carrier.name.startswith("io.debezium.time.") or carrier.name == UUID_NAME:
        return None
    if carrier.kind == "string":
        return f"({w} <=> '{UNAVAILABLE}')"
    if carrier.kind == "bytes" and not carrier.is_decimal:
        return f"({w} <=> '{UNAVAILABLE_B64}')"
    if carrier.kind == "map":
        return f"(size({w}) = 1 AND {w}['{UNAVAILABLE}'] <=> '{UNAVAILABLE}')"
    element = carrier.element
    if carrier.kind != "array" or element is None:
        return None
    if element.kind == "string" and element.name == UUID_NAME:
        return f"(size({w}) = 1 AND {w}[0] <=> '{UNAVAILABLE_UUID}')"
    if element.kind in ("string", "bytes") and not element.is_decimal:
        mark = UNAVAILABLE if element.kind == "string" else UNAVAILABLE_B64
        return f"(size({w}) = 1 AND {w}[0] <=> '{mark}')"
    if element.kind in _INTS and not element.name:
        return f"({w} <=> {UNAVAILABLE_NUMBERS})"
    return None


def toastable(table: MirrorTable) -> list[str]:
    """Columns that can carry PostgreSQL's unchanged-TOAST placeholder."""
    if not dialects.of(table.dialect).toast_placeholders:
        return []
    return [
        c.name
        for c in table.columns
        if c.name not in table.key and unavailable_sql("w", parse_carrier(c.carrier))
    ]


def newest_value_sql(c: str, over: str) -> str:
    """Dedupe (``merge_sql.dedupe_sql``), an aggregate over each key's events (the window
    ``over``): the newest event's value of ``c`` that is not a placeholder, with its
    position (``_cdc_f_<c>``)."""
    return (
        f"max_by(named_struct('v', {q(c)}, 'p', _cdc_position), IF(_cdc_op = 'd' OR "
        f"{q(placeholder_flag(c))}, NULL, _cdc_position)) OVER {over} AS {q(fill(c))}"
    )


def filled_sql(c: str, key_changes: bool) -> list[str]:
    """Dedupe, over the newest event ``n``: ``c`` filled from the batch's newest value when
    ``n`` carries the placeholder, and ``_cdc_t_<c>`` still true when nothing in the batch
    fills it. ``key_changes``: a key-change create after that value (``_cdc_kc``) wins, its old
    key's row has the value (``toast_chain.py``)."""
    t, f = q(placeholder_flag(c)), q(fill(c))
    usable = f"{f} IS NOT NULL"
    if key_changes:
        usable += f" AND (_cdc_kc IS NULL OR {f}.p >= _cdc_kc.p)"
    return [
        f"IF(n.{t} AND {usable}, {f}.v, n.{q(c)}) AS {q(c)}",
        f"(n.{t} AND NOT ({usable})) AS {t}",
    ]


def placeholder_sql(table: MirrorTable) -> str:
    """Over decoded changes: the change carries an unchanged-TOAST placeholder in some column
    (a batch without one is MERGEd without reading the stored values, ``kept_sql``)."""
    flags = [q(placeholder_flag(c)) for c in toastable(table)]
    return f"({' OR '.join(flags)})" if flags else "false"


def kept_sql(c: str) -> str:
    """The MERGE's ``UPDATE SET`` of ``c``: the stored value when the change carries the
    placeholder."""
    return f"{q(c)} = IF(s.{q(placeholder_flag(c))}, t.{q(c)}, s.{q(c)})"


def inserted_sql(c: str) -> str:
    """The MERGE's ``INSERT`` value of ``c``: NULL rather than the placeholder (only an
    event whose value is known nowhere gets here, and it is dead-lettered first)."""
    return f"IF(s.{q(placeholder_flag(c))}, NULL, s.{q(c)})"
