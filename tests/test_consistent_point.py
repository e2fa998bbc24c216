"""The consistent point's proof (mirror/consistent_point.py): the cases one by one, then a
simulation of a source whose transactions span tables, its changes reaching their topics
and the transaction topic each at its own pace, cut into batches at random: whenever the
point moves, every table's tagged state holds exactly the transactions up to it."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from cdcmirror.mirror.consistent_point import (
    Applied,
    Batch,
    Key,
    Ledger,
    Point,
    TxEnd,
    advance,
    covers,
    merged,
    same_point,
)

T, U = "s.t", "s.u"
BOTH = frozenset({T, U})


def end(tx: str, offset: int, **counts: int) -> TxEnd:
    return TxEnd(tx, offset, 1000 + offset, tuple((f"s.{c}", n) for c, n in counts.items()))


def seen(lo: int, hi: int, newest: int) -> Applied:
    return Applied(((lo, hi),), (1, newest))


def test_orders_from_two_partitions_and_two_batches_add_up() -> None:
    orders = merged(((1, 1), (3, 3)), ((2, 2),))
    assert orders == ((1, 3),) and covers(orders, 3) and not covers(orders, 4)


def test_complete_transactions_move_the_point_and_a_later_one_splits_its_table() -> None:
    applied: dict[Key, Applied] = {
        ("a", T): seen(1, 2, 10),
        ("a", U): seen(1, 1, 11),
        ("b", T): seen(1, 1, 20),  # b's END not read yet: past the point
    }
    step = advance(Ledger(), Batch(("a", "b"), (end("a", 1, t=2, u=1),), applied), BOTH)
    assert step.moved and step.ledger.point == Point("a", 1, 1001, (1, 11))
    assert step.split == frozenset({T}) and step.waiting is None
    assert step.ledger.applied == {("b", T): seen(1, 1, 20)}


def test_an_end_read_before_its_changes_waits_for_them() -> None:
    first = advance(Ledger(), Batch(("a",), (end("a", 1, t=1, u=2),), {}), BOTH)
    assert not first.moved and first.waiting == "transaction a: 0 of 1 change(s) of s.t applied"
    half = {("a", T): seen(1, 1, 5), ("a", U): seen(2, 2, 7)}  # u's first on another partition
    second = advance(first.ledger, Batch((), (), half), BOTH)
    assert not second.moved and second.waiting == "transaction a: 1 of 2 change(s) of s.u applied"
    third = advance(second.ledger, Batch((), (), {("a", U): seen(1, 1, 6)}), BOTH)
    assert third.moved and third.ledger.point is not None and third.ledger.point.position == (1, 7)


def test_replayed_changes_and_ends_are_not_counted_again() -> None:
    step = advance(Ledger(), Batch(("a",), (end("a", 1, t=1),), {("a", T): seen(1, 1, 5)}), BOTH)
    assert step.moved
    replay = Batch(("a",), (end("a", 9, t=1),), {("a", T): seen(1, 1, 5)})
    again = advance(step.ledger, replay, BOTH)
    assert not again.moved and again.ledger.pending == () and again.ledger.applied == {}


def test_a_transaction_begun_before_the_ledger_is_not_waited_for() -> None:
    batch = Batch(("b",), (end("a", 1, t=1), end("b", 2, t=1)), {("b", T): seen(1, 1, 9)})
    step = advance(Ledger(), batch, BOTH)
    assert step.moved and step.ledger.point is not None and step.ledger.point.tx == "b"


def test_tables_the_job_does_not_mirror_are_left_out_of_the_proof() -> None:
    batch = Batch(("a",), (end("a", 1, t=1, other=5),), {("a", T): seen(1, 1, 3)})
    assert advance(Ledger(), batch, BOTH).moved


def test_changes_without_transaction_metadata_keep_the_point_where_it_is() -> None:
    batch = Batch(("a",), (end("a", 1, t=1),), {("a", T): seen(1, 1, 3)}, frozenset({T}))
    step = advance(Ledger(), batch, BOTH)
    assert not step.moved and step.waiting == "changes of s.t carry no transaction metadata"


def test_a_table_holding_a_later_transaction_from_an_earlier_batch_holds_the_point() -> None:
    # batch 1: a is missing u's change; b (t only... and u) is applied to t: past any point
    one = Batch(
        ("a", "b"),
        (end("a", 1, t=1, u=1), end("b", 2, t=1, u=1)),
        {("a", T): seen(1, 1, 1), ("b", T): seen(1, 1, 3)},
    )
    step = advance(Ledger(), one, BOTH)
    assert not step.moved
    # batch 2: a completes, b does not: t holds b's change, so no snapshot of t is at a
    step = advance(step.ledger, Batch((), (), {("a", U): seen(1, 1, 2)}), BOTH)
    assert not step.moved
    assert step.waiting == "s.t holds changes of transaction b, applied before the point reached it"
    # batch 3: b completes: the point passes both
    step = advance(step.ledger, Batch((), (), {("b", U): seen(1, 1, 4)}), BOTH)
    assert step.moved and step.ledger.point is not None and step.ledger.point.tx == "b"


def test_a_table_loaded_by_reads_past_the_newest_transaction_holds_the_point() -> None:
    # u was loaded by Spark by reads that ended at (1, 6): its rows may hold b's change
    loaded = {U: (1, 6)}
    one = Batch(("a", "b"), (end("a", 1, t=1),), {("a", T): seen(1, 1, 4), ("b", U): seen(1, 1, 5)})
    step = advance(Ledger(), one, BOTH, loaded)
    assert not step.moved and step.split == frozenset()
    assert step.waiting == "s.u was loaded by reads that ended at (1, 6), past transaction a"
    # b's END and a third transaction past the reads: the point passes them all
    two = Batch(("c",), (end("b", 2, u=1), end("c", 3, t=1)), {("c", T): seen(1, 1, 7)})
    step = advance(step.ledger, two, BOTH, loaded)
    assert step.moved and step.ledger.point is not None and step.ledger.point.tx == "c"
    # a table loaded long ago (its reads ended before the point) holds nothing back
    step = advance(Ledger(), one, BOTH, {U: (1, 2)})
    assert step.moved and step.ledger.point is not None and step.ledger.point.tx == "a"


def test_the_several_tables_rule() -> None:
    a, b = Point("1", 0, 0, (1,)).text(), Point("2", 1, 0, (2,)).text()
    assert same_point([a, a]) and not same_point([a, b]) and not same_point([])


# -- the simulation ----------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    tx: int
    table: str
    order: int
    position: tuple[int, ...]


def _source(rng: random.Random, tables: list[str], n: int) -> list[dict[str, int]]:
    return [
        {t: rng.randint(1, 3) for t in rng.sample(tables, rng.randint(1, len(tables)))}
        for _ in range(n)
    ]


@pytest.mark.parametrize("seed", range(40))
def test_whenever_the_point_moves_every_table_is_tagged_at_it(seed: int) -> None:
    rng = random.Random(seed)
    tables = ["s.a", "s.b", "s.c"]
    txs = _source(rng, tables, 60)
    topics: dict[str, list[Change]] = {t: [] for t in tables}
    tx_topic: list[tuple[str, int, TxEnd | None]] = []  # BEGIN and END records
    step_no = 0
    for i, counts in enumerate(txs):
        tx_topic.append(("BEGIN", i, None))
        for table, n in counts.items():
            for k in range(1, n + 1):
                step_no += 1
                topics[table].append(Change(i, table, k, (1, i, step_no)))
        counts_t = tuple(counts.items())
        tx_topic.append(("END", i, TxEnd(str(i), len(tx_topic), i, counts_t)))
    read = {t: 0 for t in [*tables, "tx"]}
    heads: dict[str, set[tuple[int, int]]] = {t: set() for t in tables}
    tagged: dict[str, set[tuple[int, int]]] = {}
    ledger, last_point = Ledger(), -1
    for batch_no in range(200):
        final = batch_no >= 190  # at the end every topic is read to its end
        ends: list[TxEnd] = []
        begins: list[str] = []
        applied: dict[Key, Applied] = {}
        sizes = {**{t: len(topics[t]) for t in tables}, "tx": len(tx_topic)}
        new_read = {
            t: sizes[t] if final else min(sizes[t], read[t] + rng.randint(0, 6)) for t in read
        }
        for kind, i, record in tx_topic[read["tx"] : new_read["tx"]]:
            if kind == "BEGIN":
                begins.append(str(i))
            elif record is not None:
                ends.append(record)
        batch_changes = {t: topics[t][read[t] : new_read[t]] for t in tables}
        if rng.random() < 0.2 and read[tables[0]] > 0:  # a replay of the table's last change
            batch_changes[tables[0]].append(topics[tables[0]][read[tables[0]] - 1])
        for t, changes in batch_changes.items():
            for c in changes:
                a = Applied(((c.order, c.order),), c.position)
                key = (str(c.tx), t)
                applied[key] = applied[key] | a if key in applied else a
        read = new_read
        step = advance(ledger, Batch(tuple(begins), tuple(ends), applied), frozenset(tables))
        point = step.ledger.point
        for t, changes in batch_changes.items():
            if step.moved and point is not None and t in step.split:
                heads[t] |= {(c.tx, c.order) for c in changes if c.position <= point.position}
                tagged[t] = set(heads[t])
                heads[t] |= {(c.tx, c.order) for c in changes}
            else:
                heads[t] |= {(c.tx, c.order) for c in changes}
                if step.moved:
                    tagged[t] = set(heads[t])
        if step.moved:
            assert point is not None
            p = int(point.tx)
            assert p > last_point  # only forward
            last_point = p
            for t in tables:
                want = {
                    (i, k)
                    for i, counts in enumerate(txs[: p + 1])
                    for k in range(1, counts.get(t, 0) + 1)
                }
                assert tagged[t] == want, (batch_no, t, p)
        ledger = step.ledger
    assert last_point == len(txs) - 1  # everything read: the point reaches the last one
