"""The schema part of a JSON-with-schemas event, as Spark SQL text. Pure.

Debezium's JSON converter writes each event as ``{"schema":...,"payload":...}``: kilobytes
of schema before a payload of a few hundred bytes. A batch's distinct schema parts (the
text before the first :data:`PAYLOAD_MARK`, ``evolution.distinct_schemas_sql``) are known
before its decode, from a first look or from the checkpoint, and each event is compared
with them once (:func:`part_sql`): the number of the part it starts with is a column of
its own (:func:`part_column`), which its UTF-8 check (:func:`utf8_sql`), the text its
envelope is parsed from (:func:`payload_text_sql`) and the check that its schema is one
the job applied (:func:`known_schema_sql`) read. Before, each of the three compared the
value's kilobytes of schema again.
"""

from __future__ import annotations

import hashlib
import json

from cdcmirror.mirror.envelope import UTF8_SQL
from cdcmirror.sql_text import sql_string

PAYLOAD_MARK = ',"payload":'


def _listed(parts: list[str]) -> list[str]:
    return sorted(set(parts))


def part_column(parts: list[str]) -> str:
    """The name of the column :func:`part_sql` computes for ``parts``, its own for each set
    of parts (so that no column computed for other parts is ever read as theirs).

    >>> part_column(['{"schema":{}}']) == part_column(['{"schema":{}}', '{"schema":{}}'])
    True
    >>> part_column(["a"]) != part_column(["b"])
    True
    """
    digest = hashlib.sha256(json.dumps(_listed(parts)).encode("utf-8")).hexdigest()
    return f"_cdc_part_{digest[:16]}"


def part_sql(parts: list[str]) -> str:
    """Per JSON Kafka row: the number (from 1, in sorted order) of the first of the schema
    ``parts`` its value starts with, followed by the payload mark; 0 when none.

    >>> print(part_sql(['{"schema":{}}']))
    CASE WHEN startswith(CAST(value AS STRING), '{"schema":{}},"payload":') THEN 1 ELSE 0 END
    """
    whens = [f"WHEN {_starts_with_sql(p)} THEN {i}" for i, p in enumerate(_listed(parts), 1)]
    return f"CASE {' '.join(whens)} ELSE 0 END" if whens else "0"


def _starts_with_sql(part: str) -> str:
    """Per JSON Kafka row: its value starts with the schema ``part`` and the payload mark."""
    return f"startswith(CAST(value AS STRING), {sql_string(part + PAYLOAD_MARK)})"


def known_schema_sql(known: list[str], parts: list[str] | None = None) -> str:
    """Per JSON Kafka row: its value starts with one of the ``known`` schema parts (the text
    before the first ``PAYLOAD_MARK``, which holds none: so the value's first mark ends the
    part, and its schema is that part). ``parts``: those of the row's :func:`part_column`,
    read when they are the known ones; else the value is compared with each.

    >>> print(known_schema_sql(['{"schema":{}}']))
    (startswith(CAST(value AS STRING), '{"schema":{}},"payload":'))
    >>> known_schema_sql(["a"], ["a"]) == f"({part_column(['a'])} > 0)"
    True
    >>> known_schema_sql([])
    '(false)'
    """
    if known and parts is not None and _listed(known) == _listed(parts):
        return f"({part_column(parts)} > 0)"
    tests = [_starts_with_sql(k) for k in _listed(known)]
    return f"({' OR '.join(tests) or 'false'})"


def payload_text_sql(parts: list[str]) -> str:
    """Per JSON Kafka row (with the :func:`part_column` of ``parts``): the text its envelope is
    parsed from. A value that starts with one of the schema ``parts`` is given as
    ``{"payload":`` and the rest of the value after its schema: ``from_json`` then reads a
    few hundred bytes, not the kilobytes of schema before the payload, which the envelope's
    parse skips anyway. Only a part that is a JSON object's one member, ``"schema"``, is cut
    (the value's parse is then the same either way); any other value is parsed whole.

    >>> parts = ['{"schema":{}', '{"schema":{}}']
    >>> print(payload_text_sql(parts).replace(part_column(parts), "p"))
    ... # doctest: +NORMALIZE_WHITESPACE
    CASE p WHEN 1 THEN concat('{', CAST(substring(value, 14) AS STRING))
    ELSE CAST(value AS STRING) END
    >>> payload_text_sql([])
    'CAST(value AS STRING)'
    """
    value = "CAST(value AS STRING)"
    listed = _listed(parts)
    cases = [
        f"WHEN {i} THEN concat('{{', {_rest_sql(part + ',')})"
        for i, part in enumerate(listed, 1)
        if _schema_only(part)
    ]
    return f"CASE {part_column(listed)} {' '.join(cases)} ELSE {value} END" if cases else value


def utf8_sql(parts: list[str]) -> str:
    """Per JSON Kafka row (with the :func:`part_column` of ``parts``): the value is NULL or
    UTF-8 text (``envelope.UTF8_SQL``). A value that starts with one of the schema ``parts``
    and the payload mark (compared byte by byte with their UTF-8, which ends at a character)
    is UTF-8 when the rest is: only the rest, a few hundred bytes, is checked, not the
    kilobytes of schema before it.

    >>> print(utf8_sql(['{"schema":{}']).replace(part_column(['{"schema":{}']), "p"))
    ... # doctest: +NORMALIZE_WHITESPACE
    CASE p WHEN 1 THEN is_valid_utf8(CAST(substring(value, 24) AS STRING))
    ELSE value IS NULL OR is_valid_utf8(CAST(value AS STRING)) END
    >>> utf8_sql([]) == UTF8_SQL
    True
    """
    listed = _listed(parts)
    cases = [
        f"WHEN {i} THEN is_valid_utf8({_rest_sql(part + PAYLOAD_MARK)})"
        for i, part in enumerate(listed, 1)
    ]
    return (
        f"CASE {part_column(listed)} {' '.join(cases)} ELSE {UTF8_SQL} END" if cases else UTF8_SQL
    )


def _rest_sql(head: str) -> str:
    """Per JSON Kafka row that starts with ``head``: the rest of its value, as text. The cut is
    at the byte after ``head``'s UTF-8, which ends at a character."""
    return f"CAST(substring(value, {len(head.encode('utf-8')) + 1}) AS STRING)"


def _schema_only(part: str) -> bool:
    """``part`` and a closing brace are a JSON object of one member, ``schema``."""
    try:
        value = json.loads(part + "}")
    except ValueError:
        return False
    return isinstance(value, dict) and list(value) == ["schema"]
