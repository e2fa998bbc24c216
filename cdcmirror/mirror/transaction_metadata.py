"""Debezium's transaction metadata as the consistent point reads it
(``mirror/consistent_point.py``): the records of the transaction topic, and the transaction
block of each change event, as Spark SQL text and Python values. Pure.

With ``provide.transaction.metadata`` the connector writes to ``<topic prefix>.transaction``
a BEGIN and an END record of every transaction (``{"status": "END", "id": ...,
"event_count": n, "data_collections": [{"data_collection": "public.t", "event_count": k}],
"ts_ms": ...}``), and each change event carries ``"transaction": {"id": ...,
"total_order": i, "data_collection_order": j}``.

Transaction ids. MySQL and MariaDB name a transaction by its GTID (or binlog place), the same
text in its changes and its END. PostgreSQL's connector writes ``"<xid>:<LSN>"``, and the LSN
is the change's own in a change event and the commit's in the END: a PostgreSQL transaction
is its xid, the text before the colon.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cdcmirror import dialects
from cdcmirror.mirror.consistent_point import Applied, Batch, TxEnd
from cdcmirror.mirror.positions import position_gap_sql, source_length

TRANSACTION_TOPIC = "transaction"  # Debezium's ``topic.transaction`` default
UNMARKED = "\u0000unmarked"  # the transaction of a streamed change that names none


def transaction_topic(prefix: str) -> str:
    """The transaction topic of a connector whose topics start with ``prefix``.

    >>> transaction_topic("shop")
    'shop.transaction'
    """
    return f"{prefix}.{TRANSACTION_TOPIC}"


def transaction_id(dialect: str, raw: str) -> str:
    """A transaction's id as both its changes and its END name it.

    >>> transaction_id("postgresql", "771:34567000"), transaction_id("mysql", "3E11FA47:23")
    ('771', '3E11FA47:23')
    """
    return dialects.of(dialect).transaction_id(raw)


def decoded_runs_sql(view: str, dialect: str) -> str:
    """One table's decoded events of a batch (``view``, with ``_cdc_position`` and ``_cdc_tx``,
    ``envelope.TX_TYPE``): per transaction, each run of consecutive ``data_collection_order``
    with the newest source position in it (the source part, ``positions.source_length``), as
    one JSON text, a list of ``{tx, lo, hi, newest}`` (one row: a batch of single-change
    transactions has as many runs as events). A streamed change without a transaction block
    counts under transaction ``UNMARKED``; snapshot reads are outside any transaction and
    count nowhere, nor does an event without a whole source position (a dead letter, which
    holds the point anyway). A change sent twice (the same order again) counts once. A streamed
    change's phase counts as 1, whatever a re-load mark made of it (``reload_mark.py``): the
    proof counts every change its transaction wrote."""
    n = source_length(dialect)
    return f"""
WITH c AS (
  SELECT tx, o, max(pos) AS pos FROM (
    SELECT concat(array(1L), slice(_cdc_position, 2, {n - 1})) AS pos,
      coalesce(_cdc_tx.id, '{UNMARKED}') AS tx, coalesce(_cdc_tx.order, 0) AS o
    FROM {view} WHERE _cdc_op IS NOT NULL AND _cdc_tx.streamed
      AND NOT {position_gap_sql(dialect)}
  )
  GROUP BY tx, o
), i AS (
  SELECT *, o - row_number() OVER (PARTITION BY tx ORDER BY o) AS island FROM c
), r AS (
  SELECT tx, min(o) AS lo, max(o) AS hi, max(pos) AS newest FROM i GROUP BY tx, island
)
SELECT to_json(collect_list(struct(tx, lo, hi, newest))) AS runs FROM r
"""


def runs_of(topic: str, text: str | None) -> list[ChangeRun]:
    """The runs of :func:`decoded_runs_sql`'s text, of the table of ``topic``.

    >>> runs_of("s.t", '[{"tx": "7", "lo": 1, "hi": 2, "newest": [1, 5, 9]}]')
    [ChangeRun(topic='s.t', tx='7', lo=1, hi=2, newest=(1, 5, 9))]
    """
    return [
        ChangeRun(
            topic, str(r["tx"]), int(r["lo"]), int(r["hi"]), tuple(int(x) for x in r["newest"])
        )
        for r in json.loads(text or "[]")
    ]


@dataclass(frozen=True)
class ChangeRun:
    """One run of :func:`decoded_runs_sql`."""

    topic: str
    tx: str
    lo: int
    hi: int
    newest: tuple[int, ...]


def batch_of(
    runs: Iterable[ChangeRun],
    collections: Mapping[str, str],
    markers: Iterable[tuple[int, str]],
    dialect: str,
    schemas: bool,
    next_offset: int | None = None,
) -> Batch:
    """What a batch read, for the proof: its change runs (``collections``: each table's topic
    to its data collection, ``schema.table`` as Debezium names it) and the transaction
    topic's records (offset, value text) read with it, up to ``next_offset``.

    >>> runs = [ChangeRun("s.public.t", "7", 1, 2, (1, 5, 9)),
    ...         ChangeRun("s.public.u", UNMARKED, 0, 0, (1, 3, 3))]
    >>> end = '{"status": "END", "id": "7:99", "ts_ms": 5, "data_collections": '
    >>> end += '[{"data_collection": "public.t", "event_count": 2}]}'
    >>> b = batch_of(runs, {"s.public.t": "public.t", "s.public.u": "public.u"},
    ...     [(0, '{"status": "BEGIN", "id": "7:10"}'), (1, end)], "postgresql", False)
    >>> b.begins, b.ends[0], dict(b.applied), b.unmarked
    (('7',), TxEnd(tx='7', offset=1, commit_ms=5, counts=(('public.t', 2),)), \
{('7', 'public.t'): Applied(orders=((1, 2),), newest=(1, 5, 9))}, frozenset({'public.u'}))
    """
    applied: dict[tuple[str, str], Applied] = {}
    unmarked: set[str] = set()
    for run in runs:
        table = collections.get(run.topic)
        if table is None:
            continue
        if run.tx == UNMARKED:
            unmarked.add(table)
            continue
        seen = Applied(((run.lo, run.hi),), run.newest)
        key = (run.tx, table)
        applied[key] = applied[key] | seen if key in applied else seen
    begins: list[str] = []
    ends: list[TxEnd] = []
    for offset, text in sorted(markers):
        marker = parse_marker(text, schemas)
        if marker is None:
            continue
        status, raw, record = marker
        tx = transaction_id(dialect, raw)
        if status == "BEGIN":
            begins.append(tx)
        elif status == "END":
            ends.append(TxEnd(tx, offset, int(str(record.get("ts_ms") or 0)), _counts(record)))
    return Batch(tuple(begins), tuple(ends), applied, frozenset(unmarked), next_offset)


def parse_marker(text: str | None, schemas: bool) -> tuple[str, str, Mapping[str, object]] | None:
    """A transaction topic record's status, raw id and fields; None for anything else.

    >>> parse_marker('{"schema": {}, "payload": {"status": "BEGIN", "id": "1:2"}}', True)
    ('BEGIN', '1:2', {'status': 'BEGIN', 'id': '1:2'})
    """
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if schemas and isinstance(record, dict):
        record = record.get("payload")
    if not isinstance(record, dict) or record.get("id") is None:
        return None
    status = record.get("status")
    if status not in ("BEGIN", "END"):
        return None
    return str(status), str(record["id"]), record


def _counts(record: Mapping[str, object]) -> tuple[tuple[str, int], ...]:
    collections = record.get("data_collections") or []
    assert isinstance(collections, list)
    return tuple(
        (str(c["data_collection"]), int(c["event_count"]))
        for c in collections
        if isinstance(c, dict)
    )


@dataclass(frozen=True)
class Published:
    """What publishing a point needs of one table: the snapshot that holds the table at the
    point and the high-water mark it records (None: not known)."""

    snapshot_id: int | None
    mark: Sequence[int] | None = field(default=None)


def past_point(mark: Sequence[int] | None, position: Sequence[int]) -> bool:
    """Whether a snapshot recording ``mark`` may hold a change after the point's
    ``position``: a batch run again can find its tables past the point already.

    >>> past_point([1, 9, 9], (1, 9, 9)), past_point([1, 9, 10], (1, 9, 9)), past_point(None, (1,))
    (False, True, False)
    """
    return mark is not None and tuple(mark) > tuple(position)
