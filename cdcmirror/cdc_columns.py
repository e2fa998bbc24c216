"""The ``_cdc_`` columns cdcmirror adds after the source columns of every mirrored table.

Shared by ``bootstrap`` (which creates them) and the mirror job (which fills them).
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "_cdc_"
"""Reserved: the mirror's columns and the working columns of its SQL all start with it, so
no source column can be named like one (Spark matches names ignoring case)."""

ICEBERG_METADATA = (
    "_file", "_pos", "_deleted", "_spec_id", "_partition", "_row_id",
    "_last_updated_sequence_number", "_change_type", "_change_ordinal", "_commit_snapshot_id",
)  # fmt: skip
"""Iceberg's metadata column names (``MetadataColumns``): Spark will not read a table that
has a column of one of these names."""


def name_problem(name: str) -> str | None:
    """Why a source column (or event field) cannot be named ``name`` in a mirrored table, or
    None when it can.

    >>> name_problem("_cdc_x"), name_problem("_rn")
    ("starts with '_cdc_', cdcmirror's own prefix", None)
    >>> name_problem("_PARTITION")
    'is the name of an Iceberg metadata column'
    """
    lower = name.lower()
    if lower.startswith(PREFIX):
        return f"starts with {PREFIX!r}, cdcmirror's own prefix"
    if lower in ICEBERG_METADATA:
        return "is the name of an Iceberg metadata column"
    return None


def placeholder_flag(column: str) -> str:
    """The decoded event's flag: ``column`` carries Debezium's unchanged-TOAST placeholder
    (``mirror/toast.py``).

    >>> placeholder_flag("note")
    '_cdc_t_note'
    """
    return f"{PREFIX}t_{column}"


def wire(column: str) -> str:
    """The decoded event's value of ``column`` as it came on the wire, before its carrier's
    conversion (``mirror/envelope.py``)."""
    return f"{PREFIX}w_{column}"


def fill(column: str) -> str:
    """The position of the key's newest event in the batch that carries a value of a TOAST
    ``column`` (``mirror/toast.py``)."""
    return f"{PREFIX}f_{column}"


def before_fill(column: str) -> str:
    """The position of an old key's newest value of a TOAST ``column`` before its key
    change (``mirror/toast_chain.py``)."""
    return f"{PREFIX}bf_{column}"


def old_key(key: str) -> str:
    """A key-change create's old value of key column ``key`` (``mirror/key_change.py``)."""
    return f"{PREFIX}ok_{key}"


def key_low(key: str) -> str:
    """The batch's lowest value of key column ``key`` (``mirror/key_range.py``)."""
    return f"{PREFIX}lo_{key}"


def key_high(key: str) -> str:
    """The batch's highest value of key column ``key`` (``mirror/key_range.py``)."""
    return f"{PREFIX}hi_{key}"


@dataclass(frozen=True)
class IcebergColumn:
    """One column of an Iceberg table as plain data; ``type`` is an Iceberg type string."""

    name: str
    type: str
    required: bool = False
    doc: str | None = None


OP = IcebergColumn(
    "_cdc_op", "string", doc="operation of the last change: r (snapshot read), c, u, d"
)
POSITION = IcebergColumn(
    "_cdc_position",
    "list<long>",
    doc="source position of the last change, compared element by element: PostgreSQL "
    "[phase, last commit LSN, LSN, ...], MySQL/MariaDB [phase, binlog file index, position, "
    "row, ...]; "
    "Kafka partition and offset come last",
)
SOURCE_TS = IcebergColumn(
    "_cdc_source_ts", "timestamptz", doc="commit time of the last change at the source"
)
DELETED = IcebergColumn(
    "_cdc_deleted", "boolean", doc="true when the row was deleted at the source (soft deletes)"
)
CDC_COLUMNS = (OP, POSITION, SOURCE_TS, DELETED)


FIRST_OP = f"{PREFIX}first_op"
"""A deduplicated change's key's first event's operation in the batch: whether the key
was stored before it (``u``, ``d``) or not (``c``), as the source saw it
(``mirror/direct_merge.py``)."""
