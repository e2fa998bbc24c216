"""Benchmark: freshness of the continuous mirror under a steady writer, per trigger.

For each trigger: five PostgreSQL tables (1,000 rows each) are bootstrapped and the
continuous `cdcmirror mirror` runs in its own process; a writer then makes R transactions per
second for S seconds (each one statement on a random table: 70 % updates, 15 % inserts,
15 % deletes). Every insert and update writes a global sequence number into the row and
the writer notes the time its commit returned. After the writer stops and the mirror caught
up, the job is stopped and each table's Iceberg snapshots are read: the rows a snapshot
made visible are those whose sequence number is above the previous snapshot's highest and
up to its own (a table's events apply in commit order), so each write's delay is that
snapshot's commit time minus the write's commit time. Deletes carry no sequence number and
are not measured. Prints p50/p95/p99/max delay, the data and delete files added per hour
per table, and the median and longest batch (from the job's log, kept in its work
directory). With the consistent tag on (the default), also each write's delay until the
tag named a point holding it: from the job's log, the first tag move whose point (its
source commit time, the move's time less the lag the line gives) is at or after the
write's commit. Needs the provisioned PostgreSQL and the stack (`make provision stack-up`).

    .venv/bin/python benchmarks/freshness.py [TRIGGERS] [SECONDS] [TX_PER_S] [EVERY_BATCHES]
    # default 1,10,60 180 200 0

``FRESHNESS_MIRROR`` (JSON) adds settings to the job's ``[mirror]`` section, e.g.
``'{"parallelism": 8}'``.
"""

from __future__ import annotations

import bisect
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.mirror_batch import batch_done
from cdcmirror.catalog import load_catalog
from cdcmirror.config import load_config
from support import services
from support.mirror_env import MirrorJob
from support.mirror_fixture import bootstrap, make_config

TABLES = 5
ROWS = 1000


def main(triggers: list[int], seconds: int, rate: int, every: int) -> None:
    results = [run(t, seconds, rate, every) for t in triggers]
    print(f"\nfreshness, {rate} tx/s over {TABLES} tables for {seconds} s, every_batches={every}")
    print(
        "| trigger s | writes | p50 s | p95 s | p99 s | max s | data files/h/table "
        "| delete files/h/table | snapshots | batch s p50 | batch s max "
        "| tag p50 s | tag p95 s | writes no tag held |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['trigger']} | {r['writes']:,} | {r['p50']:.1f} | {r['p95']:.1f} "
            f"| {r['p99']:.1f} | {r['max']:.1f} | {r['data_h']:,.0f} | {r['delete_h']:,.0f} "
            f"| {r['snapshots']} | {r['batch_p50']:.1f} | {r['batch_max']:.1f} "
            f"| {r['tag'][0]:.1f} | {r['tag'][1]:.1f} | {r['untagged']} |"
        )


def run(trigger: int, seconds: int, rate: int, every: int) -> dict[str, Any]:
    schema = services.unique("fresh")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        for t in range(TABLES):
            conn.execute(
                f"CREATE TABLE {schema}.t{t} (id bigint PRIMARY KEY, seq bigint, note text)"
            )
            conn.execute(
                f"INSERT INTO {schema}.t{t} SELECT i, 0, md5(i::text) "
                f"FROM generate_series(1, {ROWS}) i"
            )
        services.publish_schema(conn, schema)
    work = Path(tempfile.mkdtemp(prefix="cdcmirror-fresh-"))
    extra: dict[str, Any] = {"maintain": {"every_batches": every}} if every else {}
    if os.environ.get("FRESHNESS_MIRROR"):  # e.g. '{"parallelism": 8}'
        extra["mirror"] = json.loads(os.environ["FRESHNESS_MIRROR"])
    config_path = make_config(
        work, schema, "postgresql", f"{schema}.*", services.TEST_DATABASE, **extra
    )
    try:
        bootstrap(config_path)
        config = load_config(path=config_path, environ={}, cwd=work)
        namespace = config.iceberg.namespace
        info = {"CDCMIRROR_LOG_LEVEL": "INFO"}
        job = MirrorJob(config_path, f"{trigger} seconds", info, keep_log=work / "job.log")
        try:
            catalog = load_catalog(config)
            names = [f"{namespace}.t{t}" for t in range(TABLES)]
            wait_until(lambda: all(_has_snapshot(catalog, n) for n in names), 300, job)
            print(f"trigger {trigger} s: snapshot loaded, writing {rate} tx/s for {seconds} s")
            started = time.time()
            writes, last = write(schema, seconds, rate)
            wait_until(
                lambda: all(_max_seq(catalog, n) >= last[n[-1]] for n in names if last.get(n[-1])),
                600,
                job,
            )
            ended = time.time()
        finally:
            job.stop()
        log = job.log.read_text(errors="replace")
        batches = _batch_seconds(log, started, ended)
        tagged = _tag_delays(log, [at for w in writes.values() for _, at in w])
        delays, data, deletes, snaps = [], 0, 0, 0
        for n in names:
            d, a, b, s = _table_delays(catalog, n, writes.get(n[-1], []), started)
            delays += d
            data, deletes, snaps = data + a, deletes + b, snaps + s
        hours = (ended - started) / 3600
        delays.sort()
        q = statistics.quantiles(delays, n=100)
        return {
            "trigger": trigger,
            "writes": len(delays),
            "p50": q[49],
            "p95": q[94],
            "p99": q[98],
            "max": delays[-1],
            "data_h": data / hours / TABLES,
            "delete_h": deletes / hours / TABLES,
            "snapshots": snaps,
            "batch_p50": statistics.median(batches) if batches else 0.0,
            "batch_max": max(batches, default=0.0),
            "tag": _quantiles(tagged),
            "untagged": sum(1 for d in tagged if d is None),
        }
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


TAG_MOVED = re.compile(r"consistent tag \S+ at transaction .* \(committed ([\d.]+) s ago\)")
# a write's commit returns after the source stamped it: the point holding it may name a
# commit time this much before the writer's clock read
COMMIT_SLACK = 0.002


def _stamp(line: str) -> float:
    """A log line's time (local, ``2026-12-07 12:00:00,517``)."""
    seconds = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
    return seconds + int(line[20:23]) / 1000


def _tag_delays(log: str, writes: list[float]) -> list[float | None]:
    """Each write's delay until a tag move's point held it (None: no move did)."""
    moves = []  # (moved at, the point's source commit time)
    for line in log.splitlines():
        if (found := TAG_MOVED.search(line)) is not None:
            at = _stamp(line)
            moves.append((at, at - float(found.group(1))))
    delays: list[float | None] = []
    for written in writes:
        held = (at for at, point in moves if point >= written - COMMIT_SLACK)
        first = next(held, None)
        delays.append(None if first is None else first - written)
    return delays


def _quantiles(delays: list[float | None]) -> tuple[float, float]:
    """p50 and p95 of the known delays (0, 0 when none)."""
    known = sorted(d for d in delays if d is not None)
    if len(known) < 2:
        return 0.0, 0.0
    q = statistics.quantiles(known, n=100)
    return q[49], q[94]


def _batch_seconds(log: str, started: float, ended: float) -> list[float]:
    """The seconds of the job's batches that ended while the writer ran or the mirror caught
    up (the log's "batch N done in S s" lines, stamped in local time)."""
    seconds = []
    for line in log.splitlines():
        done = batch_done(line)
        if done is None:
            continue
        stamp = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
        if started <= stamp <= ended + 1:
            seconds.append(done[1])
    return seconds


def write(
    schema: str, seconds: int, rate: int
) -> tuple[dict[str, list[tuple[int, float]]], dict[str, int]]:
    """Writes at ``rate`` per second; per table (its digit) the (sequence, commit time) of
    each insert and update, and the last sequence written."""
    rnd = random.Random(20261124)
    ids = {str(t): list(range(1, ROWS + 1)) for t in range(TABLES)}
    next_id = ROWS + 1
    writes: dict[str, list[tuple[int, float]]] = {str(t): [] for t in range(TABLES)}
    seq = 0
    start = time.monotonic()
    with services.pg_connect() as conn:
        for k in range(seconds * rate):
            pause = start + k / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            t = str(rnd.randrange(TABLES))
            roll = rnd.random()
            if roll < 0.15 and len(ids[t]) > 100:
                victim = ids[t].pop(rnd.randrange(len(ids[t])))
                conn.execute(f"DELETE FROM {schema}.t{t} WHERE id = %s", (victim,))
                continue
            seq += 1
            if roll < 0.30:
                conn.execute(f"INSERT INTO {schema}.t{t} VALUES (%s, %s, 'new')", (next_id, seq))
                ids[t].append(next_id)
                next_id += 1
            else:
                row = ids[t][rnd.randrange(len(ids[t]))]
                conn.execute(f"UPDATE {schema}.t{t} SET seq = %s WHERE id = %s", (seq, row))
            writes[t].append((seq, time.time()))
        took = time.monotonic() - start
    print(f"  wrote {seconds * rate:,} statements in {took:.0f} s")
    return writes, {t: w[-1][0] for t, w in writes.items() if w}


def _has_snapshot(catalog: Any, name: str) -> bool:
    try:
        return catalog.load_table(name).current_snapshot() is not None
    except Exception:
        return False


def _max_seq(catalog: Any, name: str, snapshot_id: int | None = None) -> int:
    table = catalog.load_table(name)
    column = table.scan(selected_fields=("seq",), snapshot_id=snapshot_id).to_arrow()["seq"]
    values = [v for v in column.to_pylist() if v is not None]
    return max(values, default=0)


def _table_delays(
    catalog: Any, name: str, writes: list[tuple[int, float]], since: float
) -> tuple[list[float], int, int, int]:
    """Delays of this table's writes; data and delete files added, snapshots made, from the
    writer's start on."""
    table = catalog.load_table(name)
    seqs = [s for s, _ in writes]
    delays: list[float] = []
    data = deletes = made = 0
    seen = 0
    for snap in sorted(table.snapshots(), key=lambda s: s.timestamp_ms):
        committed = snap.timestamp_ms / 1000
        if committed < since:
            continue
        made += 1
        summary: Any = snap.summary or {}
        data += int(summary.get("added-data-files") or 0)
        deletes += int(summary.get("added-delete-files") or 0)
        top = max(seen, _max_seq(catalog, name, snap.snapshot_id))
        low, high = bisect.bisect_right(seqs, seen), bisect.bisect_right(seqs, top)
        delays += [committed - at for _, at in writes[low:high]]
        seen = top
    return delays, data, deletes, made


def wait_until(done: Any, timeout: float, job: MirrorJob) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        job.assert_alive()
        if time.monotonic() > deadline:
            raise SystemExit(f"not caught up after {timeout:.0f} s")
        time.sleep(3)


if __name__ == "__main__":
    with services.forgetting_made():
        main(
            [int(t) for t in (sys.argv[1] if len(sys.argv) > 1 else "1,10,60").split(",")],
            int(sys.argv[2]) if len(sys.argv) > 2 else 180,
            int(sys.argv[3]) if len(sys.argv) > 3 else 200,
            int(sys.argv[4]) if len(sys.argv) > 4 else 0,
        )
