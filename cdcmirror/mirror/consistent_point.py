"""A source's consistent point (DESIGN.md, "A consistent database"): the newest source
transaction P such that every transaction committed at or before P is applied to every
mirrored table, and none after it, proven from Debezium's transaction metadata. Pure.

What the proof reads. With ``provide.transaction.metadata`` Debezium writes a BEGIN and an
END record of every transaction to ``<prefix>.transaction``, in the order the source
committed them (the END is written at the commit, after the transaction's changes), and
each END counts the transaction's changes per table (``data_collections``). Every change
event carries its transaction and its place among that transaction's changes of its table
(``transaction.data_collection_order``, 1, 2, …). The changes reach their tables' topics
independently, and a batch's offsets are taken topic by topic, so a batch can hold part of
a transaction: some of its tables' changes, or the END before the changes.

The ledger. A transaction is *complete* when, for every mirrored table its END names, the
job has applied change number 1 to N of it (N the END's count); replayed changes add
nothing, since the orders are a set. The point moves over the complete transactions at the
head of the ENDs read since it, in commit order, and stops at the first incomplete one.

Why one snapshot of each table is exactly P. Commit order is source position order (a later
transaction's changes have greater positions; PostgreSQL's sequence leads with the previous
commit's LSN, the binlog is written in commit order), so the changes of transactions at or
before P are exactly those at or below P's newest position. A batch whose changes of a
table go past P is applied in two commits (``split``): the changes at or below P's
position, then the rest; the first commit's snapshot is that table's state at P, the second
keeps the head as fresh as without the point. A table the batch did not touch is at P in
its current snapshot, unless an earlier batch applied to it a transaction the point has not
reached yet; then no snapshot of it is exactly P, and the point does not move in this batch
(``waiting`` says why). Such a transaction is one that was incomplete, or behind an
incomplete one, when an earlier batch split: the next batches complete it in all but
pathological cases (a change that never reaches Kafka), and the point then moves past it.

Replays. A change of a transaction at or before the point (a Debezium replay, a batch run
again) is older than the point's position and is left out of the ledger; an END of a
transaction the point already passed is recognised by its id among the recently proven
ones. A transaction that began before the ledger did (its BEGIN was not read) cannot be
proven and is not waited for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

Position = tuple[int, ...]
"""The source part of a ``_cdc_position`` (``positions.py``): commit order."""
Orders = tuple[tuple[int, int], ...]
"""Closed ranges of ``data_collection_order``, sorted and disjoint."""

PROVEN_KEPT = 10_000  # transaction ids remembered to recognise a replayed END


def merged(a: Orders, b: Orders) -> Orders:
    """The union of two sets of orders, as ranges.

    >>> merged(((1, 3),), ((4, 4), (7, 9)))
    ((1, 4), (7, 9))
    >>> merged(((5, 6), (1, 2)), ((2, 5),))
    ((1, 6),)
    """
    out: list[tuple[int, int]] = []
    for lo, hi in sorted((*a, *b)):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def covers(orders: Orders, count: int) -> bool:
    """Whether changes 1 to ``count`` are all there.

    >>> covers(((1, 3),), 3), covers(((1, 2), (4, 4)), 4), covers((), 0)
    (True, False, True)
    """
    return count <= 0 or (len(orders) > 0 and orders[0][0] <= 1 and orders[0][1] >= count)


@dataclass(frozen=True)
class TxEnd:
    """One END record of the transaction topic."""

    tx: str  # the transaction, as its changes name it
    offset: int  # the record's offset in the transaction topic: commit order
    commit_ms: int  # the source's commit time (the record's ``ts_ms``)
    counts: tuple[tuple[str, int], ...]  # (data collection, changes) as Debezium lists them


@dataclass(frozen=True)
class Applied:
    """What the job applied of one transaction to one table: the orders of its changes and
    the newest source position among them."""

    orders: Orders
    newest: Position

    def __or__(self, other: Applied) -> Applied:
        return Applied(merged(self.orders, other.orders), max(self.newest, other.newest))


@dataclass(frozen=True)
class Point:
    """A proven consistent point: the newest transaction it holds, where its END is in the
    transaction topic, its commit time, and the newest source position of the transactions
    up to it (the split line of a table's batch)."""

    tx: str
    offset: int
    commit_ms: int
    position: Position

    def text(self) -> str:
        """The table property ``cdcmirror.consistent-point``: one JSON object, equal on every
        table tagged at the same point."""
        return json.dumps(
            {
                "tx": self.tx,
                "offset": self.offset,
                "commit_ms": self.commit_ms,
                "position": list(self.position),
            },
            sort_keys=True,
        )

    @staticmethod
    def parse(text: str) -> Point:
        """``text()`` read back.

        >>> p = Point("7", 3, 1000, (1, 20, 30))
        >>> Point.parse(p.text()) == p
        True
        """
        data = json.loads(text)
        return Point(
            str(data["tx"]),
            int(data["offset"]),
            int(data["commit_ms"]),
            tuple(int(x) for x in data["position"]),
        )


Key = tuple[str, str]  # (transaction, data collection)


@dataclass(frozen=True)
class Ledger:
    """What the proof carries from one batch to the next."""

    point: Point | None = None
    began: frozenset[str] = frozenset()  # transactions whose BEGIN was read, not yet proven
    pending: tuple[TxEnd, ...] = ()  # ENDs read after the point, in commit order
    applied: Mapping[Key, Applied] = field(default_factory=dict)  # after the point only
    proven: tuple[str, ...] = ()  # the newest proven transactions, newest last
    next_offset: int = 0  # the transaction topic's next record to read
    # why the point can no longer move (a change of the window was not applied: a dead
    # letter, a stopped table); it stays until the ledger is started again
    held: str | None = None

    def text(self) -> str:
        """The ledger as JSON (kept beside the streaming checkpoint, one file a batch)."""
        return json.dumps(
            {
                "point": json.loads(self.point.text()) if self.point else None,
                "began": sorted(self.began),
                "pending": [
                    [e.tx, e.offset, e.commit_ms, [list(c) for c in e.counts]] for e in self.pending
                ],
                "applied": [
                    [tx, table, [list(r) for r in a.orders], list(a.newest)]
                    for (tx, table), a in sorted(self.applied.items())
                ],
                "proven": list(self.proven),
                "next_offset": self.next_offset,
                "held": self.held,
            }
        )

    @staticmethod
    def parse(text: str) -> Ledger:
        """``text()`` read back.

        >>> end = TxEnd("9", 4, 100, (("s.t", 2),))
        >>> ledger = Ledger(Point("8", 3, 90, (1, 5)), frozenset({"9"}), (end,),
        ...     {("9", "s.t"): Applied(((1, 1),), (1, 7))}, ("8",), 5, None)
        >>> Ledger.parse(ledger.text()) == ledger
        True
        """
        data = json.loads(text)
        point = data["point"]
        return Ledger(
            Point.parse(json.dumps(point)) if point else None,
            frozenset(str(x) for x in data["began"]),
            tuple(
                TxEnd(str(tx), int(o), int(ms), tuple((str(c), int(n)) for c, n in counts))
                for tx, o, ms, counts in data["pending"]
            ),
            {
                (str(tx), str(table)): Applied(
                    tuple((int(lo), int(hi)) for lo, hi in orders), tuple(int(x) for x in newest)
                )
                for tx, table, orders, newest in data["applied"]
            },
            tuple(str(x) for x in data["proven"]),
            int(data["next_offset"]),
            data["held"],
        )


@dataclass(frozen=True)
class Batch:
    """What one batch read that the proof needs: the transaction topic's BEGINs (ids) and
    ENDs in offset order, and per (transaction, table) the changes it applies."""

    begins: tuple[str, ...] = ()
    ends: tuple[TxEnd, ...] = ()
    applied: Mapping[Key, Applied] = field(default_factory=dict)
    unmarked: frozenset[str] = frozenset()  # tables with streamed changes without a transaction
    next_offset: int | None = None  # the transaction topic's next record after those read


@dataclass(frozen=True)
class Step:
    """The proof after a batch: the ledger to carry on, whether the point moved, the tables
    whose batch holds changes after the (new) point and so commits twice, and why the point
    stopped short of the newest END read (None: it did not)."""

    ledger: Ledger
    moved: bool
    split: frozenset[str]
    waiting: str | None


def _older(position: Position, point: Point | None) -> bool:
    return point is not None and position <= point.position


def advance(
    ledger: Ledger,
    batch: Batch,
    mirrored: frozenset[str],
    loaded: Mapping[str, Position] | None = None,
) -> Step:
    """The point after ``batch``, whose changes of ``mirrored`` tables (data collections, as
    Debezium names them) are all applied by the time it is published. ``loaded``: where the
    reads of the tables loaded by Spark ended (``load/plan.read_through``); such a table is
    a state of the source only from there on, so the point does not move to a transaction
    before it.

    >>> a = TxEnd("a", 0, 100, (("s.t", 1), ("s.u", 1)))
    >>> b = TxEnd("b", 1, 200, (("s.t", 1),))
    >>> seen = {("a", "s.t"): Applied(((1, 1),), (1, 5)), ("b", "s.t"): Applied(((1, 1),), (1, 9))}
    >>> step = advance(Ledger(), Batch(("a", "b"), (a, b), seen), frozenset({"s.t", "s.u"}))
    >>> step.moved, step.ledger.point, step.split, step.waiting
    (False, None, frozenset(), 'transaction a: 0 of 1 change(s) of s.u applied')
    >>> late = {("a", "s.u"): Applied(((1, 1),), (1, 4))}
    >>> step = advance(step.ledger, Batch((), (), late), frozenset({"s.t", "s.u"}))
    >>> step.moved, step.ledger.point.tx, step.ledger.point.position, step.waiting
    (True, 'b', (1, 9), None)

    A table re-loaded up to (1, 12), after ``b``, holds changes past it:

    >>> again = advance(Ledger(), Batch(("a", "b"), (a, b), seen), frozenset({"s.t", "s.u"}),
    ...                 {"s.u": (1, 12)})
    >>> late_step = advance(again.ledger, Batch((), (), late), frozenset({"s.t", "s.u"}),
    ...                     {"s.u": (1, 12)})
    >>> late_step.moved, late_step.waiting
    (False, 's.u was loaded by reads that ended at (1, 12), past transaction b')
    """
    point = ledger.point
    if ledger.held:
        return Step(held_back(ledger, batch), False, frozenset(), ledger.held)
    unmarked = sorted(batch.unmarked & mirrored)
    if unmarked:
        why = f"changes of {', '.join(unmarked)} carry no transaction metadata"
        return Step(held_back(ledger, batch), False, frozenset(), why)
    proven_ids = set(ledger.proven)
    began = set(ledger.began) | {tx for tx in batch.begins if tx not in proven_ids}
    applied = dict(ledger.applied)
    for key, seen in batch.applied.items():
        if key[0] in proven_ids or _older(seen.newest, point):
            continue  # a replay of what the point holds
        applied[key] = applied[key] | seen if key in applied else seen
    known = {end.tx for end in ledger.pending}
    pending = list(ledger.pending)
    for end in batch.ends:
        if end.tx in proven_ids or end.tx in known:
            continue  # a replayed END
        if end.tx not in began:
            continue  # began before the ledger did: cannot be proven, not waited for
        pending.append(end)
        known.add(end.tx)
    done: list[TxEnd] = []
    waiting = None
    for end in pending:
        short = [
            (c, n, have.orders if (have := applied.get((end.tx, c))) else ())
            for c, n in end.counts
            if c in mirrored
        ]
        short = [(c, n, orders) for c, n, orders in short if not covers(orders, n)]
        if short:
            c, n, orders = short[0]
            count = sum(hi - lo + 1 for lo, hi in orders)
            waiting = f"transaction {end.tx}: {count} of {n} change(s) of {c} applied"
            break
        done.append(end)
    read_to = ledger.next_offset if batch.next_offset is None else batch.next_offset
    unmoved = replace(
        ledger,
        began=frozenset(began),
        pending=tuple(pending),
        applied=applied,
        next_offset=read_to,
    )  # the ledger when the point does not move: everything read is kept
    if not done:
        return Step(unmoved, False, frozenset(), waiting)
    ids = {end.tx for end in done}
    newest = max(
        [seen.newest for (tx, _), seen in applied.items() if tx in ids]
        + ([point.position] if point is not None else []),
        default=(),
    )
    last = done[-1]
    new_point = Point(last.tx, last.offset, last.commit_ms, newest)
    ahead = sorted(
        (c, through) for c, through in (loaded or {}).items() if c in mirrored and newest < through
    )
    if ahead:
        c, through = ahead[0]
        why = f"{c} was loaded by reads that ended at {through}, past transaction {last.tx}"
        return Step(unmoved, False, frozenset(), why)
    after = {key: seen for key, seen in applied.items() if key[0] not in ids}
    # a table holding, from an earlier batch, a transaction past the new point has no
    # snapshot at it: the point waits for that transaction
    earlier = {
        key: seen for key, seen in ledger.applied.items() if key[0] not in ids and key in after
    }
    if earlier:
        (tx, table), _ = min(earlier.items(), key=lambda kv: kv[1].newest)
        why = f"{table} holds changes of transaction {tx}, applied before the point reached it"
        return Step(unmoved, False, frozenset(), why)
    split = frozenset(table for (tx, table) in batch.applied if (tx, table) in after)
    kept = (*ledger.proven, *(end.tx for end in done))[-PROVEN_KEPT:]
    rest = tuple(pending[len(done) :])
    new = Ledger(new_point, frozenset(began - ids), rest, after, kept, read_to)
    return Step(new, True, split, waiting)


def held_back(ledger: Ledger, batch: Batch) -> Ledger:
    """The ledger once a batch it cannot prove anything from is applied: the point stays,
    and what the batch applied past it is remembered (it holds the tables past the point).
    The batch's transaction records are not taken: the next batch reads them again."""
    applied = dict(ledger.applied)
    for key, seen in batch.applied.items():
        if not _older(seen.newest, ledger.point):
            applied[key] = applied[key] | seen if key in applied else seen
    return replace(ledger, applied=applied)


def same_point(texts: Iterable[str | None]) -> bool:
    """Whether every table names the same point (the several-tables rule of a reader).

    >>> same_point(['{"tx": "1"}', '{"tx": "1"}']), same_point(['{"tx": "1"}', None])
    (True, False)
    """
    values = list(texts)
    return bool(values) and None not in values and len(set(values)) == 1


def position_at_most(position: Sequence[int], point: Point) -> bool:
    """Whether a change at ``position`` (its source part) is held by the point's snapshot.

    >>> position_at_most([0, 5, 5], Point("t", 0, 0, (1, 2, 3)))
    True
    """
    return tuple(position) <= point.position


def lag_seconds(point: Point, now_ms: int) -> float:
    """The point's age: now minus its source commit time."""
    return max(0.0, (now_ms - point.commit_ms) / 1000.0)
