"""Helpers for the initial-load tests: a source table big enough to split, a workload
that keeps changing it while bootstrap loads it, and a composite-key table with TOASTed
values whose keys change during the load."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from support.mirror_env import Workload

PAIRS_SQL = {
    "postgresql": (
        "CREATE TABLE {t} (tenant integer NOT NULL, code varchar(40) NOT NULL, n integer, "
        "big text, PRIMARY KEY (tenant, code))"
    ),
    "mysql": (
        "CREATE TABLE {t} (tenant int NOT NULL, code varchar(40) NOT NULL, n int, "
        "big longtext, PRIMARY KEY (tenant, code)) CHARACTER SET utf8mb4"
    ),
}


def fill_items(workload: Workload, rows: int) -> None:
    """``rows`` rows in one statement (ids after the workload's), which the workload then
    updates, deletes and re-keys like its own."""
    first = workload.next_id
    last = first + rows - 1
    src = workload.src
    if src.dialect == "postgresql":
        sql = (
            f"INSERT INTO {src.table} (id, name, qty, note) SELECT i, 'bulk ' || i, i % 1000, "
            f"repeat(md5(i::text), 4) FROM generate_series({first}, {last}) i"
        )
    else:
        sql = (  # MariaDB's sequence engine
            f"INSERT INTO {src.table} (id, name, qty, note) SELECT seq, CONCAT('bulk ', seq), "
            f"seq % 1000, REPEAT(MD5(seq), 4) FROM seq_{first}_to_{last}"
        )
    conn = src.connect()
    try:
        cur = conn.cursor()
        cur.execute(sql)
        if src.dialect == "postgresql":
            cur.execute(f"ANALYZE {src.table}")
        else:
            conn.commit()
            cur.execute(f"ANALYZE TABLE {src.table}")
    finally:
        conn.close()
    workload.ids.extend(range(first, last + 1))
    workload.next_id = last + 1


class PairsWorkload:
    """Composite keys, big incompressible text (out of line on PostgreSQL), updates that
    leave it alone (unchanged-TOAST placeholders) and key changes."""

    def __init__(self, dialect: str, table: str, connect: Callable[[], Any], seed: int) -> None:
        self.dialect, self.table, self.connect = dialect, table, connect
        self.rnd = random.Random(seed)
        self.keys: list[tuple[int, str]] = []
        self.made = 0

    def _big(self) -> str:
        return f"{self.rnd.getrandbits(4 * 6000):06000x}"

    def step(self, cur: Any) -> None:
        r = self.rnd.random()
        if len(self.keys) < 20 or r < 0.3:
            key = (self.rnd.randint(1, 5), f"k{self.made}")
            self.made += 1
            cur.execute(
                f"INSERT INTO {self.table} VALUES (%s, %s, %s, %s)",
                (*key, self.rnd.randint(0, 99), self._big()),
            )
            self.keys.append(key)
        elif r < 0.7:
            key = self.rnd.choice(self.keys)
            cur.execute(
                f"UPDATE {self.table} SET n = %s WHERE tenant = %s AND code = %s",
                (self.rnd.randint(0, 99), *key),
            )
        elif r < 0.85:
            old = self.rnd.choice(self.keys)
            new = (old[0], f"k{self.made}")
            self.made += 1
            cur.execute(
                f"UPDATE {self.table} SET code = %s WHERE tenant = %s AND code = %s",
                (new[1], *old),
            )
            self.keys.remove(old)
            self.keys.append(new)
        else:
            key = self.rnd.choice(self.keys)
            cur.execute(f"DELETE FROM {self.table} WHERE tenant = %s AND code = %s", key)
            self.keys.remove(key)

    def run(self, operations: int) -> None:
        conn = self.connect()
        try:
            for _ in range(operations):
                cur = conn.cursor()
                self.step(cur)
                if self.dialect == "mysql":
                    conn.commit()
        finally:
            conn.close()


@contextmanager
def changing(*steps: Callable[[int], None], chunk: int = 20) -> Iterator[threading.Event]:
    """Run each ``step(chunk)`` over and over on a thread until the block ends (and at
    least once), so the source changes all through what the block does."""
    stop = threading.Event()
    errors: list[BaseException] = []
    counts = [0]

    def loop() -> None:
        try:
            while True:
                for step in steps:
                    step(chunk)
                counts[0] += 1
                if stop.is_set():
                    return
                time.sleep(0.05)
        except BaseException as exc:  # the test fails on it below
            errors.append(exc)

    thread = threading.Thread(target=loop, name="workload during load", daemon=True)
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(timeout=300)
    assert not errors, f"the workload failed: {errors[0]!r}"
    assert counts[0] >= 2, "the workload did not run during the load"
