"""Decoding a Debezium envelope into the columns of its table, as Spark SQL text. Pure.

Three steps, each a list of ``selectExpr`` expressions over the previous one:

1. ``envelope_ddl``: the ``from_json`` schema of the Kafka value, with or without the
   converter's embedded schema (``{"schema": ..., "payload": ...}``).
2. ``wire_exprs``: op, source position, commit time, and each column's JSON value (from
   ``before`` for deletes, ``after`` otherwise), plus the TOAST placeholder flags; with the
   consistent tag, the event's transaction (``_cdc_tx``, :data:`TX_TYPE`).
3. ``decoded_exprs``: each value converted to its Iceberg type;
4. ``checked_exprs``: ``_cdc_error``, why the event cannot be applied (NULL when it can), which
   sends it to the dead-letter table. A separate step so that no conversion is computed twice.

Position (DESIGN.md, correctness rule 1), an array compared element by element:
PostgreSQL ``[phase, last commit LSN, LSN, partition, offset]``, MySQL/MariaDB
``[phase, binlog file index, pos, row, partition, offset]``. ``phase`` is 0 for initial
snapshot reads and 1 for streamed changes and incremental-snapshot reads, so a snapshot
sorts before the changes after it. The Kafka partition and offset only break ties inside a
batch: the guard against stored rows compares the source part (``positions.source_length``)
alone, so a replayed event never wins.

PostgreSQL: ``source.sequence`` is [last commit LSN, LSN]; pgoutput delivers transactions in
commit order, so the pair orders changes by commit, then by place in the transaction. The
first element is null for the first transaction after a connector start (seen on Debezium
3.5); the change's own LSN stands in for it: a later writer of the same row waited for the
earlier writer's commit (row lock, unique index; TRUNCATE waits for every writer), so its
LSN is past that commit, and every later transaction's last commit is past it too.
An incremental-snapshot read carries the position of the window that emitted it; a
transaction that committed after that window has a greater last commit LSN, so it wins
even when it wrote its change before the window.
"""

from __future__ import annotations

from collections.abc import Mapping

from cdcmirror import dialects
from cdcmirror.cdc_columns import old_key, placeholder_flag, wire
from cdcmirror.mirror.carriers import convert_sql, parse_carrier, wire_type
from cdcmirror.mirror.positions import position_gap_sql, position_sql, snapshot_read_sql
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable
from cdcmirror.mirror.toast import toastable, unavailable_sql
from cdcmirror.sql_text import q, spark_name, sql_string

__all__ = ["q", "spark_name"]  # and the decoder's own names below

OPS = ("c", "u", "d", "r", "t")
# On a key change Debezium sends delete(old key) + create(new key). The delete names the
# new key in NEW_KEY_HEADER, the create names the old key in OLD_KEY_HEADER. On PostgreSQL
# unchanged TOASTed values of the row are placeholders in that create, so they are taken
# from the old key's row (key_change.py, toast_chain.py).
NEW_KEY_HEADER = "__debezium.newkey"
OLD_KEY_HEADER = "__debezium.oldkey"


def row_struct_ddl(table: MirrorTable) -> str:
    fields = [f"{q(c.name)}: {wire_type(parse_carrier(c.carrier))}" for c in table.columns]
    return f"STRUCT<{', '.join(fields)}>"


UNREADABLE = "_cdc_unreadable"
"""The envelope's field that ``from_json`` fills with the whole value when any part of it does
not fit its type (its ``columnNameOfCorruptRecord``): Spark would otherwise read such a part
as NULL and keep the rest, and a NULL would be written where the source has a value."""
JSON_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": UNREADABLE}


def source_ddl(table: MirrorTable) -> str:
    """The fields of the envelope's ``source`` block the decode reads (``name TYPE, ...``)."""
    source = dialects.of(table.dialect).source_fields_ddl
    if table.reloaded is not None and table.reloaded.source_fields:
        source += f", {table.reloaded.source_fields}"  # which changes the re-loaded rows hold
    return source


TRANSACTION_DDL = "transaction STRUCT<id STRING, data_collection_order BIGINT>"
"""The envelope's transaction block as the decode reads it (``provide.transaction.metadata``)."""
TX_TYPE = "STRUCT<id: STRING, order: BIGINT, streamed: BOOLEAN>"
"""The decoded event's ``_cdc_tx``, what the consistent point reads of it
(``transaction_metadata.decoded_runs_sql``): its transaction as the END record names it, its
place among the transaction's changes of its table, and whether it is a streamed change (a
snapshot read belongs to no transaction). NULL when the job has no consistent tag."""


def envelope_ddl(table: MirrorTable, schemas: bool, transactions: bool = False) -> str:
    """The ``from_json`` schema of the value; ``transactions``: with its transaction block."""
    row = row_struct_ddl(table)
    source = source_ddl(table)
    block = f", {TRANSACTION_DDL}" if transactions else ""  # where ``AvroEnvelope`` builds it
    body = f"before {row}, after {row}, source STRUCT<{source}>{block}, op STRING, ts_ms BIGINT"
    return f"{f'payload STRUCT<{body}>' if schemas else body}, {UNREADABLE} STRING"


UTF8 = "_cdc_utf8"
"""A column of the batch's Kafka rows (JSON formats): the value is NULL or UTF-8 text
(``UTF8_SQL``), checked once per event when the batch is read, then used by the batch
summary and the decode."""
UTF8_SQL = "value IS NULL OR is_valid_utf8(CAST(value AS STRING))"
NOT_UTF8_SQL = f"IF({UTF8}, NULL, 'the value is not UTF-8 text (JSON must be)')"
"""The decode error of a JSON value whose bytes are not UTF-8: Spark would read each bad byte
as U+FFFD, and text values would be stored with it."""


def raw_rows_ddl(schemas: bool) -> str:
    """The ``from_json`` schema that reads an unreadable value's rows as JSON text per column
    (to name the columns whose value did not fit)."""
    rows = "before MAP<STRING, STRING>, after MAP<STRING, STRING>"
    return f"payload STRUCT<{rows}>" if schemas else rows


def raw_rows_sql(env: str, schemas: bool) -> str:
    """The ``_cdc_raw`` column: the rows as JSON text per column, for unreadable values only."""
    return (
        f"IF({env}.{UNREADABLE} IS NULL, NULL, "
        f"from_json({env}.{UNREADABLE}, '{raw_rows_ddl(schemas)}'))"
    )


Variants = tuple[tuple[str, Mapping[str, str]], ...]
"""The row schemas of a batch whose carriers differ from the columns' recorded ones
(``evolution.schema_carriers``): for each, a SQL condition over the Kafka row that is true
for its events, and the carrier of each such column. Each event's values are converted with
its own schema's carriers (DESIGN.md rule 8)."""
VARIANT = "_cdc_variant"  # the number (from 1) of the event's entry of the Variants, or 0


def variant_sql(variants: Variants) -> str:
    """Per Kafka row: the number of the first entry of ``variants`` whose condition holds.

    >>> variant_sql((("_cdc_schema_id = 7", {"at": "x"}),))
    'CASE WHEN _cdc_schema_id = 7 THEN 1 ELSE 0 END'
    """
    whens = " ".join(f"WHEN {cond} THEN {i}" for i, (cond, _) in enumerate(variants, 1))
    return f"CASE {whens} ELSE 0 END" if whens else "0"


def wire_exprs(
    table: MirrorTable,
    schemas: bool,
    decode_error: str = "NULL",
    variants: Variants = (),
    transactions: bool = False,
) -> list[str]:
    """Step 2, over a frame with the Kafka columns and ``env`` (the parsed value).

    ``decode_error``: why the value could not be turned into JSON text (Avro), or NULL.
    ``variants``: the batch's schemas whose carriers differ (:data:`Variants`).
    ``transactions``: ``env`` has the transaction block (``envelope_ddl``), read into
    ``_cdc_tx``.
    """
    p = "env.payload" if schemas else "env"
    out = [
        f"{_tx_sql(table, p) if transactions else f'CAST(NULL AS {TX_TYPE})'} AS _cdc_tx",
        f"CAST({decode_error} AS STRING) AS _cdc_decode_error",
        "topic AS _cdc_topic",
        "partition AS _cdc_partition",
        "offset AS _cdc_offset",
        "headers AS _cdc_headers",
        f"{p}.op AS _cdc_op",
        f"{position_sql(table.dialect, p, _in_reload(table, p))} AS _cdc_position",
        f"CAST(timestamp_millis({p}.source.ts_ms) AS TIMESTAMP) AS _cdc_source_ts",
        f"{p} IS NULL AS _cdc_unparsed",
        f"env.{UNREADABLE} IS NOT NULL AS _cdc_unreadable",
        f"{_misfits(table, p, '_cdc_raw.payload' if schemas else '_cdc_raw')} AS _cdc_misfits",
        f"{p}.after IS NULL AS _cdc_no_after",
        f"{p}.before IS NULL AS _cdc_no_before",
    ]
    if variants:
        out.append(f"{variant_sql(variants)} AS {VARIANT}")
    for c in table.columns:
        out.append(
            f"IF({p}.op = 'd', {p}.before.{q(c.name)}, {p}.after.{q(c.name)}) AS {q(wire(c.name))}"
        )
    for name in toastable(table):
        flag = unavailable_sql(q(wire(name)), parse_carrier(table.column(name).carrier))
        out.append(f"coalesce({flag}, false) AS {q(placeholder_flag(name))}")
    if toastable(table):
        key_ddl = ", ".join(
            f"{q(k)}: {wire_type(parse_carrier(table.column(k).carrier))}" for k in table.key
        )
        # the first header of that key (no lambda: ``positions.position_gap_sql`` says why)
        first = f"array_position(headers.key, '{OLD_KEY_HEADER}')"
        header = f"get(headers, {first} - 1).value"
        ddl = sql_string(f"STRUCT<{key_ddl}>")
        out.append(f"from_json(CAST({header} AS STRING), {ddl}) AS _cdc_old_key")
    return out


def _tx_sql(table: MirrorTable, p: str) -> str:
    """``_cdc_tx`` of payload ``p`` (:data:`TX_TYPE`); a streamed change's phase is 1 whatever
    a re-load mark makes of its position's (``positions.position_sql``)."""
    tx = dialects.of(table.dialect).transaction_id_sql(f"{p}.transaction.id")
    streamed = f"NOT {snapshot_read_sql(p)}"
    order = f"{p}.transaction.data_collection_order"
    return f"named_struct('id', {tx}, 'order', {order}, 'streamed', {streamed})"


def _in_reload(table: MirrorTable, p: str) -> str | None:
    """SQL: the change in payload ``p`` is one the table's re-loaded rows hold; None when the
    table has no re-load mark."""
    if table.reloaded is None:
        return None
    return table.reloaded.sql(p, dialects.of(table.dialect).source_order_sql(p))


def _misfits(table: MirrorTable, p: str, raw: str) -> str:
    """The columns of an unreadable value whose JSON value is there but did not fit."""
    names = []
    for c in table.columns:
        value = f"IF({p}.op = 'd', {p}.before.{q(c.name)}, {p}.after.{q(c.name)})"
        name = sql_string(c.name)
        text = f"IF({p}.op = 'd', {raw}.before[{name}], {raw}.after[{name}])"
        names.append(f"IF({text} IS NOT NULL AND {value} IS NULL, {name}, NULL)")
    return f"IF(_cdc_raw IS NULL, NULL, nullif(concat_ws(', ', {', '.join(names)}), ''))"


def old_key_columns(table: MirrorTable) -> list[str]:
    """``_cdc_ok_<key>``: the old key of a key-change create (NULL otherwise); PostgreSQL tables
    with TOASTable columns only."""
    return [old_key(k) for k in table.key] if toastable(table) else []


def _errors(table: MirrorTable) -> str:
    """Over the output of ``decoded_exprs`` (converted columns next to their wire values)."""
    checks = [
        ("_cdc_unparsed OR _cdc_op IS NULL", "'not a Debezium change event (no payload.op)'"),
        (
            f"_cdc_op NOT IN ({', '.join(repr(o) for o in OPS)})",
            "concat('unknown op ', _cdc_op)",
        ),
        ("_cdc_op IN ('c', 'u', 'r') AND _cdc_no_after", "'no after row'"),
        ("_cdc_op = 'd' AND _cdc_no_before", "'no before row'"),
        (
            "_cdc_unreadable AND NOT _cdc_unparsed AND _cdc_op IS NOT NULL",
            "concat('a value does not fit its type (text in a number, a fraction in an "
            "integer, a number past 64 bits, a scalar where a row belongs)', "
            "coalesce(concat(': column(s) ', _cdc_misfits), ''))",
        ),
        (
            position_gap_sql(table.dialect),
            "'no source position (source block missing or incomplete)'",
        ),
    ]
    toast = set(toastable(table))
    for c in table.columns:
        w = q(wire(c.name))
        if c.name in table.key:
            checks.append(
                (f"_cdc_op <> 't' AND {w} IS NULL", sql_string(f"key column {c.name} is null"))
            )
        skip = f" AND NOT {q(placeholder_flag(c.name))}" if c.name in toast else ""
        checks.append(
            (
                f"_cdc_op <> 'd' AND {w} IS NOT NULL{skip} AND {q(c.name)} IS NULL",
                sql_string(
                    f"column {c.name}: value does not convert from {c.carrier} to {c.iceberg}"
                ),
            )
        )
    cases = ", ".join(f"IF(coalesce({cond}, false), {msg}, NULL)" for cond, msg in checks)
    return f"coalesce(_cdc_decode_error, nullif(concat_ws('; ', {cases}), '')) AS _cdc_error"


_KAFKA_AND_CDC = [
    "_cdc_topic",
    "_cdc_partition",
    "_cdc_offset",
    "_cdc_headers",
    "_cdc_op",
    "_cdc_position",
    "_cdc_tx",
]


def decoded_exprs(table: MirrorTable, variants: Variants = ()) -> list[str]:
    """Step 3: each column converted to its Iceberg type (its wire value kept for step 4),
    with the carrier of the event's own row schema (``variants``, as ``wire_exprs`` got)."""
    out = [*_KAFKA_AND_CDC, "_cdc_source_ts", "_cdc_decode_error", "_cdc_unparsed", "_cdc_no_after"]
    out += ["_cdc_unreadable", "_cdc_misfits"]
    out.append("_cdc_no_before")
    julian = "_cdc_op = 'r'" if dialects.of(table.dialect).julian_snapshot_dates else "false"
    for c in table.columns:
        w = q(wire(c.name))
        out.append(f"{_converted(w, c, variants, julian)} AS {q(c.name)}")
        out.append(w)
    out += [q(placeholder_flag(name)) for name in toastable(table)]
    for k, ok in zip(table.key, old_key_columns(table), strict=False):
        old = _converted(f"_cdc_old_key.{q(k)}", table.column(k), variants, "false")
        out.append(f"{old} AS {q(ok)}")
    return out


def _converted(w: str, column: MirrorColumn, variants: Variants, julian: str) -> str:
    """The conversion of wire value ``w`` of ``column``: by the carrier of the event's row
    schema where it is one of ``variants``, else by the column's.

    >>> c = MirrorColumn("t", "long", "int64 io.debezium.time.MicroTime")
    >>> print(_converted("w", c, (("x", {"t": "int32 io.debezium.time.Time"}),), "false"))
    ... # doctest: +NORMALIZE_WHITESPACE
    CASE _cdc_variant WHEN 1 THEN try_cast(try_multiply(w, 1000) AS BIGINT)
    ELSE try_cast(w AS BIGINT) END
    """
    base = convert_sql(w, parse_carrier(column.carrier), column.iceberg, julian)
    whens = [
        f"WHEN {i} THEN {convert_sql(w, parse_carrier(v[column.name]), column.iceberg, julian)}"
        for i, (_, v) in enumerate(variants, 1)
        if column.name in v
    ]
    return f"CASE {VARIANT} {' '.join(whens)} ELSE {base} END" if whens else base


def checked_exprs(table: MirrorTable) -> list[str]:
    """Step 4: the decoded event and ``_cdc_error`` (NULL when the event can be applied)."""
    out = [*_KAFKA_AND_CDC, "_cdc_source_ts"]
    out += [q(c.name) for c in table.columns]
    out += [q(placeholder_flag(name)) for name in toastable(table)]
    out += [q(ok) for ok in old_key_columns(table)]
    out.append(_errors(table))
    return out
