"""The random workload on a table of a million rows, mirrored in one big batch and then in
many small ones, on the paths a big table takes: batches newer than the table MERGEd without
a classification and without reading stored positions (``mirror/direct_merge.py``; the
first one starts from the high-water mark the initial load recorded), insert-only batches
appended, then the newest batch run again after a lost checkpoint, classified with its keys
broadcast (``merge_sql.broadcasts_keys``). The rows the workload touched are compared with
the source exactly, and ``reconcile --deep`` compares every row.

The source is filled by ``generate_series`` and loaded by Spark (``bootstrap`` with
``initial_load = "spark"``); the changes then go through Debezium."""

from __future__ import annotations

import bisect
import datetime as dt
import json
import os
import random
import shutil
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from cdcmirror.commands.mirror import mirror
from cdcmirror.config import load_config
from cdcmirror.stack.control import Stack
from support import mirror_scenarios as sc
from support import reconcile_scenarios as rc
from support import services
from support.million_env import COLUMNS, ROWS, million_source
from support.mirror_fixture import Mirrored, bootstrap
from support.spark import SparkWorld

SEED = 20261127
NAMES = list(COLUMNS)


class BigWorkload:
    """Seeded inserts, updates (uniform over the table, and on its newest keys), deletes and
    key changes, single and in transactions of 2-10; remembers every key it touched."""

    def __init__(self, table: str, seed: int) -> None:
        self.table = table
        self.rnd = random.Random(seed)
        self.ids = list(range(1, ROWS + 1))
        self.where = {i: i - 1 for i in self.ids}  # id -> index in ids
        self.next_id = ROWS + 1
        self.touched: set[int] = set()
        self.insert_share = 0.25

    def _take(self, i: int) -> None:
        last = self.ids.pop()
        if last != i:
            self.ids[self.where[i]] = last
            self.where[last] = self.where[i]
        del self.where[i]

    def _add(self, i: int) -> None:
        self.where[i] = len(self.ids)
        self.ids.append(i)

    def _pick(self) -> int:
        if self.rnd.random() < 0.3:  # the newest 1 % of the keys
            return self.ids[-self.rnd.randint(1, len(self.ids) // 100)]
        return self.rnd.choice(self.ids)

    def _values(self) -> dict[str, Any]:
        r = self.rnd
        return {
            "name": r.choice(["renamed", "ÆØÅ ✓", "", None, "x" * r.randint(1, 300)]),
            "qty": r.choice([0, -1, 2**31 - 1, r.randint(-1000, 1000), None]),
            "price": r.choice([Decimal("0.00"), Decimal("9999999999.99"), Decimal("-0.01"), None]),
            "born": r.choice([dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29)]),
            "seen_at": dt.datetime(2026, 11, 27, 12, r.randint(0, 59), 1, r.randint(0, 999999)),
            "flag": r.choice([True, False, None]),
            "data": r.choice([b"", b"\x00\xff", r.randbytes(r.randint(1, 64)), None]),
        }

    def _one(self, cur: Any) -> None:
        p = self.rnd.random()
        if p < self.insert_share:
            i, self.next_id = self.next_id, self.next_id + 1
            row = self._values()
            marks = ", ".join(["%s"] * (len(row) + 1))
            cur.execute(
                f"INSERT INTO {self.table} (id, {', '.join(row)}) VALUES ({marks})",
                [i, *row.values()],
            )
            self._add(i)
        elif p < 0.5 + self.insert_share:
            i = self._pick()
            row = {n: self._values()[n] for n in self.rnd.sample(NAMES, self.rnd.randint(1, 3))}
            sets = ", ".join(f"{n} = %s" for n in row)
            cur.execute(f"UPDATE {self.table} SET {sets} WHERE id = %s", [*row.values(), i])
        elif p < 0.63 + self.insert_share:
            i = self._pick()
            cur.execute(f"DELETE FROM {self.table} WHERE id = %s", (i,))
            self._take(i)
        else:
            i, new = self._pick(), self.next_id
            self.next_id += 1
            cur.execute(f"UPDATE {self.table} SET id = %s WHERE id = %s", (new, i))
            self._take(i)
            self._add(new)
            self.touched.add(new)
        self.touched.add(i)

    def run(self, operations: int) -> None:
        with services.pg_connect() as conn:
            conn.autocommit = True
            done = 0
            while done < operations:
                n = 1 if self.rnd.random() < 0.6 else self.rnd.randint(2, 10)
                with conn.transaction(), conn.cursor() as cur:
                    for _ in range(n):
                        self._one(cur)
                done += n


@pytest.fixture(scope="module")
def big(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    base = spark_world.config.base_dir
    schema, config = million_source("big_pg", base, bootstrap={"initial_load": "spark"})
    bootstrap(config)
    try:
        yield Mirrored(schema, None, config, spark_world.spark, None, [])  # type: ignore[arg-type]
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


def _mirror(m: Mirrored, caplog: pytest.LogCaptureFixture, per_batch: int) -> list[dict[str, Any]]:
    """The mirror until caught up, ``per_batch`` events a batch at most; the table's lines of
    the batches that had its events."""
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    env = {**os.environ, "CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH": str(per_batch)}
    caplog.clear()
    with caplog.at_level("INFO", logger="cdcmirror.mirror"):
        mirror(load_config(m.config_path, environ=env), available_now=True)
    return sc.batch_lines(caplog, m.identifier)


def _split_key_changes(m: Mirrored, lines: list[dict[str, Any]]) -> list[int]:
    """The batches of ``lines`` whose first change shares its source LSN with the change
    before it in the topic: a key change's delete and create, cut apart by the batch's start
    (Debezium's tombstones, without a value, are no change)."""
    lsns = {
        offset: json.loads(value)["payload"]["source"]["lsn"]
        for _, offset, _, value in services.placed_records(f"{m.name}.{m.name}.items")
        if value is not None
    }
    offsets = sorted(lsns)
    split = []
    for line in lines:
        i = bisect.bisect_left(offsets, line["starts"]["0"])  # its first change's offset
        if 0 < i < len(offsets) and lsns[offsets[i]] == lsns[offsets[i - 1]]:
            split.append(line["batch"])
    return split


def _same_touched(m: Mirrored, touched: set[int]) -> None:
    """The rows of every key the workload touched, value by value, in the source and the
    mirror (absent from both when deleted)."""
    ids = sorted(touched)
    names = ", ".join(["id", *NAMES])
    with services.pg_connect() as conn:
        rows = conn.execute(
            f"SELECT {names} FROM {m.name}.items WHERE id = ANY(%s)", (ids,)
        ).fetchall()
    source = {r[0]: tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows}
    m.spark.createDataFrame([(i,) for i in ids], "id BIGINT").createOrReplaceTempView("touched")
    found = m.spark.sql(
        f"SELECT {names} FROM {m.identifier} WHERE id IN (SELECT id FROM touched)"
    ).collect()
    mirrored = {r[0]: tuple(bytes(v) if isinstance(v, bytearray) else v for v in r) for r in found}
    assert sorted(source) == sorted(mirrored), (
        f"keys only in the source {sorted(set(source) - set(mirrored))[:5]}, "
        f"only in the mirror {sorted(set(mirrored) - set(source))[:5]}"
    )
    wrong = [(i, source[i], mirrored[i]) for i in source if source[i] != mirrored[i]]
    assert not wrong, wrong[:3]


def test_random_workload_on_a_million_rows_in_one_batch_then_in_small_ones(
    big: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    work = BigWorkload(f"{big.name}.items", SEED)
    work.run(10_000)
    services.wait_published(big.name)
    lines = _mirror(big, caplog, 200_000)
    assert len(lines) == 1, lines
    assert lines[0]["direct"] and lines[0]["updates"] and lines[0]["deletes"], lines
    _same_touched(big, work.touched)

    work.run(2_000)
    services.wait_published(big.name)
    lines = _mirror(big, caplog, 150)
    # a key change's delete and create share one LSN: a batch that starts between them is
    # as old as the table's mark (as a replay of the delete would be), so it is classified;
    # every other batch goes direct. With the consistent tag (on by default) a batch can be
    # applied in two commits, cut at the point: when the second holds such a delete alone,
    # it applies nothing (the create carries the delete) and raises no mark, so the create
    # starting the next batch is newer than the table and goes direct as well
    classified = [x for x in lines if not x["direct"]]
    assert len(lines) >= 10, lines
    cut = _split_key_changes(big, lines)
    assert cut and {x["batch"] for x in classified} <= set(cut), (cut, lines)
    assert all(x["keys_broadcast"] and not x["stale"] for x in classified), classified
    _same_touched(big, work.touched)

    work.insert_share = 1.0  # inserts only: appended, no MATCHED branch
    work.run(600)
    services.wait_published(big.name)
    lines = _mirror(big, caplog, 300)
    assert len(lines) >= 2 and all(x["direct"] and x["inserts_only"] for x in lines), lines
    _same_touched(big, work.touched)

    # the checkpoint lost: the newest batch runs again, older than the table's mark, so it
    # is classified against the million rows, its keys broadcast, and changes nothing
    shutil.rmtree(big.config.path("mirror", "checkpoint_location"))
    lines = _mirror(big, caplog, 300)
    assert lines and not lines[0]["direct"] and lines[0]["keys_broadcast"], lines
    assert lines[0]["stale"] and not (lines[0]["inserts"] or lines[0]["updates"]), lines
    _same_touched(big, work.touched)
    rc.deep_in_sync(big, len(work.ids), [], settle="0")  # every row, the untouched ones too
