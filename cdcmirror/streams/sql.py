"""The SQL of a stream's batch: decode the JSON events, append them, or upsert them by
key. Pure.

An event is a Kafka record whose value is a JSON object. It is written when every field
fits its column; it goes to the dead-letter table, with the reason, when it is not UTF-8,
not a JSON object, has a value that does not fit its column, or (a stream with a schema
file) has a field the schema does not name. A record without a value (a tombstone) is no
event and is skipped.

Exactly once: an append is not idempotent, so a batch that runs again (a restart after the
table's commit, before Spark's checkpoint wrote it down) must not append again. Each commit
records, in its snapshot summary, the last offset the table holds of every topic partition
of the stream (``held_after``: all of them, not only the batch's, so the newest commit
says it all); the job reads it at start, keeps it, and writes only records after it
(``not_held_sql``). A batch that ran before is then empty for the table; a job whose
checkpoint was lost resumes the stream after those offsets (``mirror/resume.py``). A
stream with ``key_columns`` is MERGEd instead, newest event per key by (Kafka timestamp,
partition, offset), with the same filter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cdcmirror.cdc_columns import IcebergColumn
from cdcmirror.iceberg_types import spark_type
from cdcmirror.mirror.evolution import known_ids_sql
from cdcmirror.sql_text import q, sql_string
from cdcmirror.streams.schema import KAFKA_NAMES

UNREADABLE = "_cdc_unreadable"
JSON_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": UNREADABLE}
EVENT_ORDER = "struct(_kafka_timestamp, _kafka_topic, _kafka_partition, _kafka_offset)"


def event_ddl(columns: Sequence[IcebergColumn]) -> str:
    """The ``from_json`` schema of an event.

    >>> event_ddl([IcebergColumn("n", "long"), IcebergColumn("at", "timestamptz")])
    '`n` BIGINT, `at` TIMESTAMP, _cdc_unreadable STRING'
    """
    fields = [f"{q(c.name)} {spark_type(c.type)}" for c in columns]
    return ", ".join([*fields, f"{UNREADABLE} STRING"])


JSON_TEXT = "CAST(value AS STRING)"


def unknown_fields_sql(columns: Sequence[IcebergColumn], text: str) -> str:
    """The top-level field names of the JSON ``text`` that are not ``columns``.

    >>> unknown_fields_sql([IcebergColumn("n", "long")], "v")
    "filter(json_object_keys(v), k -> NOT array_contains(array('n'), k))"
    """
    known = ", ".join(sql_string(c.name) for c in columns)
    return f"filter(json_object_keys({text}), k -> NOT array_contains(array({known}), k))"


def _error(columns: Sequence[IcebergColumn], closed: bool, text: str, decode_error: str) -> str:
    checks = []
    if decode_error:  # Avro: the frame, the schema id or the body (spark/avro_frames.py)
        checks.append((f"{decode_error} IS NOT NULL", decode_error))
    checks += [
        ("NOT is_valid_utf8(" + text + ")", "'the value is not UTF-8 text (JSON must be)'"),
        ("NOT startswith(ltrim(" + text + "), '{')", "'the value is not a JSON object'"),
        (
            f"e IS NULL OR e.{UNREADABLE} IS NOT NULL",
            "'a value does not fit its column (text in a number, a fraction in an integer, "
            "a timestamp that does not parse), or the JSON does not parse'",
        ),
    ]
    if closed:  # a schema file: a field it does not name is refused, never dropped
        extra = unknown_fields_sql(columns, text)
        checks.append(
            (
                f"size({extra}) > 0",
                f"concat({sql_string('field(s) not in the stream' + chr(39) + 's schema: ')}, "
                f"array_join({extra}, ', '))",
            )
        )
    cases = " ".join(f"WHEN {cond} THEN {msg}" for cond, msg in checks)
    return f"CASE {cases} END"


def decoded_exprs(
    columns: Sequence[IcebergColumn],
    closed: bool,
    text: str = JSON_TEXT,
    decode_error: str = "",
) -> list[str]:
    """Over the batch's Kafka rows with ``e`` (the parsed ``text``): the event's columns,
    its Kafka coordinates, and ``_cdc_error`` (NULL when it can be written; ``decode_error``:
    the column of an Avro value's decoding error)."""
    out = [f"e.{q(c.name)} AS {q(c.name)}" for c in columns]
    out += [
        "topic AS _kafka_topic",
        "partition AS _kafka_partition",
        "offset AS _kafka_offset",
        "timestamp AS _kafka_timestamp",
        f"{_error(columns, closed, text, decode_error)} AS _cdc_error",
    ]
    return out


def _names(columns: Sequence[IcebergColumn]) -> list[str]:
    return [q(c.name) for c in columns] + [q(n) for n in KAFKA_NAMES]


def append_sql(target: str, events: str, columns: Sequence[IcebergColumn]) -> str:
    """Append the good events of the view ``events``.

    >>> append_sql("t", "v", [IcebergColumn("n", "long")])[:60]
    'INSERT INTO t (`n`, `_kafka_topic`, `_kafka_partition`, `_ka'
    """
    values = [q(c.name) for c in columns]
    values += ["_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp"]
    values += ["current_timestamp()"]
    return (
        f"INSERT INTO {target} ({', '.join(_names(columns))}) "
        f"SELECT {', '.join(values)} FROM {events} WHERE _cdc_error IS NULL"
    )


def upsert_sql(
    target: str, events: str, columns: Sequence[IcebergColumn], keys: Sequence[str]
) -> str:
    """MERGE the newest good event per key (by Kafka timestamp, partition, offset) into the
    table; an event not newer than the stored row changes nothing (a replay). The newest is
    the first of its key's events numbered newest first, reading only the table's columns."""
    keys_sql = ", ".join(q(k) for k in keys)
    names = _names(columns)
    used = ", ".join(names[:-1])  # the last, _ingested_at, is the commit's time
    order = f"row_number() OVER (PARTITION BY {keys_sql} ORDER BY {EVENT_ORDER} DESC)"
    newest = (
        f"SELECT {used} FROM (SELECT {used}, {order} AS _cdc_rn FROM {events} "
        "WHERE _cdc_error IS NULL) WHERE _cdc_rn = 1"
    )
    on = " AND ".join(f"t.{q(k)} = s.{q(k)}" for k in keys)
    newer = (
        "struct(s._kafka_timestamp, s._kafka_topic, s._kafka_partition, s._kafka_offset) > "
        "struct(t._kafka_timestamp, t._kafka_topic, t._kafka_partition, t._kafka_offset)"
    )
    values = [f"s.{n}" for n in names[:-1]] + ["current_timestamp()"]
    sets = ", ".join(f"{n} = {v}" for n, v in zip(names, values, strict=True))
    return (
        f"MERGE INTO {target} t USING ({newest}) s ON {on} "
        f"WHEN MATCHED AND {newer} THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED THEN INSERT ({', '.join(names)}) VALUES ({', '.join(values)})"
    )


NEW_FIELDS = "cdcmirror: an event has a field its stream's table lacks"


def new_fields_guard_sql(columns: Sequence[IcebergColumn], text: str) -> str:
    """A condition that is true, or stops the query with ``NEW_FIELDS`` when the JSON
    ``text`` has a field that no column holds (an inferred stream's write, read once from
    Kafka, learns of a new field this way; text that is no JSON object passes).

    >>> new_fields_guard_sql([IcebergColumn("n", "long")], "v")[:40]
    'assert_true(coalesce(size(filter(json_ob'
    """
    unknown = unknown_fields_sql(columns, text)
    return f"assert_true(coalesce(size({unknown}), 0) <= 0, {sql_string(NEW_FIELDS)}) IS NULL"


NEW_SCHEMA_ID = "cdcmirror: an event has a schema id its stream has not looked up"


def known_ids_guard_sql(ids: Sequence[int]) -> str:
    """A condition that is true, or stops the query with ``NEW_SCHEMA_ID`` when an Avro
    event names a schema id not in ``ids`` (an unframed value passes: a dead letter).

    >>> known_ids_guard_sql([3, 1])[:65]
    'assert_true((_cdc_schema_id IS NULL OR _cdc_schema_id IN (1, 3)),'
    """
    return f"assert_true({known_ids_sql(list(ids))}, {sql_string(NEW_SCHEMA_ID)}) IS NULL"


def not_held_sql(held: Mapping[str, Mapping[int, int]]) -> str:
    """Condition over Kafka rows: the record is after the last offset the table holds for
    its topic and partition (``held``: topic -> partition -> last offset written).

    >>> not_held_sql({"t": {0: 9, 1: 4}})
    "NOT ((topic = 't' AND ((partition = 0 AND offset <= 9) OR (partition = 1 AND offset <= 4))))"
    >>> not_held_sql({})
    'true'
    """
    per_topic = []
    for topic, parts in sorted(held.items()):
        if not parts:
            continue
        each = " OR ".join(f"(partition = {p} AND offset <= {o})" for p, o in sorted(parts.items()))
        per_topic.append(f"(topic = {sql_string(topic)} AND ({each}))")
    return f"NOT ({' OR '.join(per_topic)})" if per_topic else "true"


def held_after(
    held: Mapping[str, Mapping[int, int]], ends: Mapping[str, Mapping[int, int]]
) -> dict[str, dict[int, int]]:
    """What a table holds after a batch's commit: its last offsets per topic and partition.

    >>> held_after({"t": {0: 9, 1: 4}}, {"t": {0: 20}, "u": {0: 3}})
    {'t': {0: 20, 1: 4}, 'u': {0: 3}}
    """
    out = {t: dict(parts) for t, parts in held.items()}
    for topic, parts in ends.items():
        for p, o in parts.items():
            mine = out.setdefault(topic, {})
            mine[p] = max(o, mine.get(p, -1))
    return out
