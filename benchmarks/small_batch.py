"""Benchmark: the fixed cost of a small batch (issue 17: a batch of 100 events, ≤ 1 s).

One PostgreSQL table of 10,000 rows, bootstrapped, and the continuous `cdcmirror mirror`
job in its own process (trigger 1 s); then R rounds, each: update B rows in one
transaction, wait until the job has applied it. Prints each batch's seconds, the seconds of
its phases and its Spark jobs (from the job's log), and their medians over the warm
batches (the first three are left out: the JVM is still compiling its hot code) and over
the last third (a batch still gets faster over the first tens: 1.34 s over batches 4-12,
1.04 s over 27-40 in one run). Then the
bound, in the same run: a plain Spark MERGE of B rows (UPDATE when matched, INSERT when
not) into a copy of the mirrored table, 2R times on a session of the same catalog, the copy
made again after the first R, the median of the second R (a fresh JVM is still warming up
over the first ten); into two copies: a plain CREATE TABLE AS SELECT (copy-on-write, as
before 2026-12-05), and one written as the mirror's table is (merge-on-read, its delete
files piling up as the mirror's do; in ``--mixed`` rounds the keys picked at random, as
the mirror's rounds pick them). Needs
the provisioned PostgreSQL and the stack (`make provision stack-up`).
``SMALL_BATCH_EVENT_LOG=1``: the job writes Spark's event log;
``SMALL_BATCH_SPARK_CONF='{"key": "value"}'``: Spark settings of the job;
``SMALL_BATCH_MAINTAIN_EVERY=N``: the job maintains its tables every N batches.
``--history``: the busy table keeps a history table (``mirror.history``), to compare a
batch's cost with and without it.
``--no-consistent-tag``: the job keeps no consistent tag (``mirror.consistent_tag``, on by
default), to compare a batch's cost with and without it; with it, the tag's lag is printed.
``--avro``: the connector writes Avro through the schema registry (JSON with schemas by
default).

    .venv/bin/python benchmarks/small_batch.py [ROUNDS] [B] [--idle=N]   # default 40 of 100

``--idle=N``: N more tables of one row each mirrored by the same job and never written after
their snapshot (issue 17: a batch of 100 events ≤ 1.5 s with 100 idle tables and one busy).
``--mixed``: each round's transaction updates 60 % of its B rows, deletes 20 % and inserts
20 % new ones (the plain MERGE then deletes, updates and inserts as many).
``--busy=K``: K busy tables, not one (issue 72: 100 busy beside 100 idle in ≤ 15 s a batch):
``items`` and K - 1 tables ``busy_NNN`` of 1,000 rows, each round's transaction changing B
rows of each (``items`` as above, the others updated), so that a batch holds K * B events;
a round's seconds are its batches' (a round split over two batches counts both), its phases
and Spark jobs the sums over its tables.
"""

from __future__ import annotations

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

from benchmarks.copies import copy_like
from benchmarks.event_timeline import event_log_conf
from benchmarks.mirror_batch import batch_done
from support import services
from support.mirror_env import MirrorJob
from support.mirror_fixture import bootstrap, make_config

ROWS = 10_000
BUSY_ROWS = 1_000  # each busy table beside ``items``
COLUMNS = "id bigint PRIMARY KEY, a integer, c text, e timestamptz"
FILL = "SELECT i, 0, md5(i::text), now() FROM generate_series(1, {n}) i"


def main(rounds: int, size: int, idle: int = 0, mixed: bool = False, busy: int = 1) -> None:
    schema = services.unique("benchs")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.items ({COLUMNS})")
        conn.execute(f"INSERT INTO {schema}.items {FILL.format(n=ROWS)}")
        for i in range(busy - 1):  # changed in every round beside it
            conn.execute(f"CREATE TABLE {schema}.busy_{i:03d} ({COLUMNS})")
            conn.execute(f"INSERT INTO {schema}.busy_{i:03d} {FILL.format(n=BUSY_ROWS)}")
        for i in range(idle):  # mirrored beside it, never written after their snapshot
            conn.execute(f"CREATE TABLE {schema}.idle_{i:03d} (id bigint PRIMARY KEY, v text)")
            conn.execute(f"INSERT INTO {schema}.idle_{i:03d} VALUES (1, 'x')")
        services.publish_schema(conn, schema)
    work = Path(tempfile.mkdtemp(prefix="cdcmirror-small-"))
    extra: dict[str, Any] = {}
    conf = json.loads(os.environ.get("SMALL_BATCH_SPARK_CONF", "{}"))
    if os.environ.get("SMALL_BATCH_EVENT_LOG"):  # Spark's event log, to see where time goes
        (work / "events").mkdir()
        conf.update(event_log_conf(work / "events"))
        print(f"Spark event log in {work / 'events'}", flush=True)
    if conf:
        extra["spark"] = {"conf": conf}
    if os.environ.get("SMALL_BATCH_MAINTAIN_EVERY"):  # the job maintains every N batches
        extra["maintain"] = {"every_batches": int(os.environ["SMALL_BATCH_MAINTAIN_EVERY"])}
    tagged = "--no-consistent-tag" not in sys.argv[1:]
    if not tagged:
        extra["mirror"] = {"consistent_tag": ""}
        print("without the consistent tag", flush=True)
    if "--history" in sys.argv[1:]:
        extra["mirror"] = {**extra.get("mirror", {}), "history": [f"{schema}.items"]}
        print("with history (items__history)", flush=True)
    config = make_config(
        work,
        schema,
        "postgresql",
        f"{schema}.*",
        services.TEST_DATABASE,
        bootstrap={"initial_load": "debezium"},
        kafka_format="avro" if "--avro" in sys.argv[1:] else "json",
        **extra,
    )
    try:
        bootstrap(config)
        job = MirrorJob(
            config, "1 seconds", {"CDCMIRROR_LOG_LEVEL": "INFO"}, keep_log=work / "job.log"
        )
        try:
            batches = _rounds(job, schema, rounds, size, busy + idle, mixed, busy)
        finally:
            job.stop()
        # twice as many rounds, the second half counted: a fresh JVM warms up over ~10
        identifier = f"{schema}_mirror.items"
        plain = _plain_merges(config, identifier, rounds, size, mixed)
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")
    if tagged:
        _tag_lags((work / "job.log").read_text(errors="replace"))
    # the first batches run while the JVM compiles its hot code: left out when there are many
    warm = batches[3:] if len(batches) > 5 else batches[1:] or batches
    _report(warm, "warm", size, plain, idle, mixed, busy)
    if len(batches) >= 12:  # the JVM still gets faster for tens of batches
        steady = batches[-(len(batches) // 3) :]
        _report(steady, "last", size, plain, idle, mixed, busy)


def _plain_merges(
    config_path: Path, identifier: str, rounds: int, size: int, mixed: bool
) -> dict[str, float]:
    """The median seconds of a plain MERGE of ``size`` rows (``mixed``: a fifth of them
    deletes of stored rows, a fifth inserts of new ones) into two copies of the mirrored table:

    - ``copy-on-write``: a plain CREATE TABLE AS SELECT copy (Spark's default write mode),
      consecutive keys each round (the bound of this benchmark before 2026-12-05);
    - ``like the mirror's``: the mirrored table's write properties (merge-on-read), and the
      keys the mirror's rounds change (``mixed``: picked at random from the stored ones;
      else consecutive): its delete files pile up as the mirror's table's did.

    Each copy is MERGEd ``rounds`` times (a fresh JVM warms up over ~10), then made again
    and MERGEd ``rounds`` times more, which are counted."""
    from cdcmirror.config import load_config
    from cdcmirror.spark.session import build_spark_session

    spark = build_spark_session(load_config(config_path, environ={}), "small-batch-plain")
    try:
        out = {}
        for kind in ("copy-on-write", "like the mirror's"):
            cow = kind == "copy-on-write"
            copy = identifier + ("_plain" if cow else "_plain_mor")
            rnd = random.Random(20261205)
            seconds = []
            for r in range(2 * rounds):
                if r % rounds == 0:  # made again after the warm-up rounds
                    live = _copy(spark, identifier, copy, cow)
                # random keys where the mirror's rounds pick them so (mixed), else consecutive
                _plain_changes(spark, r, size, mixed, live if mixed and not cow else None, rnd)
                began = time.monotonic()
                spark.sql(
                    f"MERGE INTO {copy} t USING _plain_changes s ON t.id = s.id "
                    "WHEN MATCHED AND s.d THEN DELETE "
                    "WHEN MATCHED THEN UPDATE SET a = s.a "
                    "WHEN NOT MATCHED AND NOT s.d THEN INSERT (id, a) VALUES (s.id, s.a)"
                )
                seconds.append(time.monotonic() - began)
                print(f"plain MERGE, {kind}, {r}: {seconds[-1]:.2f}s", flush=True)
            out[kind] = statistics.median(seconds[rounds:])
        return out
    finally:
        spark.stop()


def _copy(spark: Any, identifier: str, copy: str, cow: bool) -> list[int]:
    """``copy`` made again from the mirrored table (``cow``: a plain CREATE TABLE AS SELECT,
    copy-on-write; else written as the mirrored table is); its keys."""
    copy_like(spark, identifier, copy, same_writes=not cow)
    return [row[0] for row in spark.sql(f"SELECT id FROM {copy}").collect()]


def _plain_changes(
    spark: Any, r: int, size: int, mixed: bool, live: list[int] | None, rnd: random.Random
) -> None:
    """Round ``r``'s changes as the view ``_plain_changes`` (id, a, d: deleted). ``live``:
    the copy's keys, from which the changed ones are picked at random (kept up to date);
    None: consecutive keys from a round's start, the new ones beyond every stored key."""
    fifth = size // 5 if mixed else 0
    if live is None:
        start = 1 + (r * size) % (ROWS - size)
        new = 10 * ROWS + r * size  # beyond every stored key
        spark.range(start, start + size).selectExpr(
            f"IF(id >= {start + size - fifth}, id - {start} + {new}, id) AS id",
            f"CAST({r + 100} AS INT) AS a",
            f"id >= {start + size - 2 * fifth} AND id < {start + size - fifth} AS d",
        ).createOrReplaceTempView("_plain_changes")
        return
    picked = [live[i] for i in rnd.sample(range(len(live)), size - fifth)]
    gone = set(picked[:fifth]) if mixed else set()
    added = list(range(20 * ROWS + r * size, 20 * ROWS + r * size + fifth))
    live[:] = [k for k in live if k not in gone] + added
    rows = [(k, r + 100, k in gone) for k in picked] + [(k, r + 100, False) for k in added]
    spark.createDataFrame(rows, "id bigint, a int, d boolean").createOrReplaceTempView(
        "_plain_changes"
    )


def _rounds(
    job: MirrorJob,
    schema: str,
    rounds: int,
    size: int,
    tables: int,
    mixed: bool = False,
    busy: int = 1,
) -> list[dict[str, Any]]:
    """Each round's batch line (its tables' lines summed when several tables are busy),
    with its batches' seconds as ``batch_seconds``."""
    live = list(range(1, ROWS + 1))
    rnd = random.Random(20261204)
    next_id = ROWS + 1
    _wait_for_lines(job, tables, 300 + 5 * tables)  # each table's snapshot
    time.sleep(5)  # a snapshot read in more than one batch: its lines all counted
    out: list[dict[str, Any]] = []
    for r in range(rounds):
        seen = len(_batch_lines(job.log.read_text(errors="replace")))
        start = 1 + (r * size) % (ROWS - size)
        # the round's changes of every busy table in one transaction
        with services.pg_connect() as conn, conn.transaction():
            if not mixed:
                conn.execute(
                    f"UPDATE {schema}.items SET a = {r + 1} "
                    f"WHERE id BETWEEN {start} AND {start + size - 1}"
                )
            else:  # 60 % updates, 20 % deletes, 20 % inserts
                fifth = size // 5
                picked = rnd.sample(range(len(live)), size - fifth)
                gone = {live[i] for i in picked[:fifth]}
                changed = [live[i] for i in picked[fifth:]]
                live = [i for i in live if i not in gone]
                added = list(range(next_id, next_id + fifth))
                next_id += fifth
                live += added
                conn.execute(
                    f"UPDATE {schema}.items SET a = {r + 1} WHERE id = ANY(%s)", (changed,)
                )
                conn.execute(f"DELETE FROM {schema}.items WHERE id = ANY(%s)", (list(gone),))
                conn.execute(
                    f"INSERT INTO {schema}.items SELECT i, {r + 1}, md5(i::text), now() "
                    "FROM unnest(%s::bigint[]) i",
                    (added,),
                )
            other = 1 + (r * size) % (BUSY_ROWS - size)
            for i in range(busy - 1):
                conn.execute(
                    f"UPDATE {schema}.busy_{i:03d} SET a = {r + 1} "
                    f"WHERE id BETWEEN {other} AND {other + size - 1}"
                )
        lines = _wait_for_lines(job, seen + busy)
        out.append(_summed(lines[seen : seen + busy]))
        print(f"round {r}: {json.dumps(out[-1])}", flush=True)
        time.sleep(2)
    return out


def _summed(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """One round's tables' batch lines as one: its batches' seconds, its tables' work."""
    if len(lines) == 1:
        return lines[0]
    batches = {line["batch"]: line["batch_seconds"] for line in lines}
    phases: dict[str, float] = {}
    for line in lines:
        for phase, seconds in line["phase_seconds"].items():
            phases[phase] = round(phases.get(phase, 0.0) + seconds, 3)
    return {
        "batches": sorted(batches),
        "tables": len(lines),
        "events": sum(line["events"] for line in lines),
        "batch_seconds": round(sum(batches.values()), 3),
        "table_seconds": round(sum(line["table_seconds"] for line in lines), 3),
        "spark_jobs": sum(line["spark_jobs"] for line in lines),
        "phase_seconds": phases,
    }


def _wait_for_lines(job: MirrorJob, count: int, timeout: float = 300) -> list[dict[str, Any]]:
    """The job's batch lines of batches with events, once there are ``count``."""
    deadline = time.monotonic() + timeout
    while True:
        lines = _batch_lines(job.log.read_text(errors="replace"))
        if len(lines) >= count:
            return lines
        job.assert_alive()
        assert time.monotonic() < deadline, f"fewer than {count} batches after {timeout}s"
        time.sleep(0.5)


def _batch_lines(log: str) -> list[dict[str, Any]]:
    seconds: dict[int, float] = {}
    stats: list[dict[str, Any]] = []
    for line in log.splitlines():
        if "mirror batch {" in line:
            s = json.loads(line.split("mirror batch ", 1)[1])
            if s["events"]:
                stats.append(s)
        elif (done := batch_done(line)) is not None:
            seconds[done[0]] = done[1]
    return [{**s, "batch_seconds": seconds[s["batch"]]} for s in stats if s["batch"] in seconds]


def _tag_lags(log: str) -> None:
    """The consistent point's lag when the tag moved (its transaction's age, from the job's
    "consistent tag … (committed S s ago)" lines) beside the tables' lag at their commits
    (the batch lines' ``lag_seconds``), p50 and p95 over the run."""
    tag = [
        float(m)
        for m in re.findall(
            r"consistent tag \S+ at transaction \S+ \(committed ([0-9.]+) s ago", log
        )
    ]
    heads = [float(m) for m in re.findall(r'"lag_seconds": ([0-9.]+)', log)]
    stays = len(re.findall(r"consistent tag \S+ stays", log))
    for label, values in (("the tag's point", tag), ("the table's head", heads)):
        if values:
            q = statistics.quantiles(values, n=20) if len(values) > 1 else values * 19
            print(
                f"{label}: lag p50 {statistics.median(values):.2f} s, p95 {q[18]:.2f} s "
                f"over {len(values)} batches"
            )
    print(f"batches that left the tag where it was: {stays}")


def _report(
    batches: list[dict[str, Any]],
    label: str,
    size: int,
    plain: dict[str, float],
    idle: int,
    mixed: bool,
    busy: int = 1,
) -> None:
    def median(f: Any) -> float:
        return float(statistics.median(f(b) for b in batches))

    phases = sorted({p for b in batches for p in b["phase_seconds"]})
    parts = ", ".join(
        f"{p} {median(lambda b, p=p: b['phase_seconds'].get(p, 0.0)):.2f}" for p in phases
    )
    total = median(lambda b: b["batch_seconds"])
    table = median(lambda b: b["table_seconds"])
    jobs = median(lambda b: b["spark_jobs"])
    print(
        f"a batch of {size} {'mixed changes' if mixed else 'updates'} into {ROWS:,} rows"
        + (f" and {size} updates into each of {busy - 1} more busy tables" if busy > 1 else "")
        + (f" beside {idle} idle tables" if idle else "")
        + f", median of {len(batches)} {label} "
        f"batches: {total:.2f}s (the table's work {table:.2f}s: {parts}); {jobs:.0f} Spark jobs"
        + (f"; {total / busy:.2f}s per busy table" if busy > 1 else "")
    )
    for kind, seconds in plain.items():
        print(
            f"the bound, a plain Spark MERGE of {size} rows into a copy of the table "
            f"({kind}), median: {seconds:.2f}s; the batch costs {total / seconds:.1f}x that "
            f"(ratio {seconds / total:.2f})"
        )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    idle = [int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--idle=")]
    busy = [int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--busy=")]
    with services.forgetting_made():
        main(
            int(args[0]) if args else 40,
            int(args[1]) if len(args) > 1 else 100,
            idle[0] if idle else 0,
            "--mixed" in sys.argv[1:],
            busy[0] if busy else 1,
        )
