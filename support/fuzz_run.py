"""The fuzzed-event run (``fuzz_events.py``) against a mirrored table: bad events interleaved
with a live workload's real ones in the same batches, then one assertion per promise: no
crash (the mirror returns), every bad event dead-lettered once with a reason, every real
event applied (the table equals its source, row by row)."""

from __future__ import annotations

import json
import os
from collections import Counter

from confluent_kafka import Producer

from cdcmirror.catalog import load_catalog
from cdcmirror.commands.job_tables import load_tables
from support import services
from support.fuzz_events import Bad, avro_fuzz, json_fuzz
from support.mirror_fixture import Mirrored
from support.mirror_scenarios import settle

FIRST_KEY = 10**12  # fuzzed events' own keys, far from the workload's
CHUNK = 500  # bad events between two slices of the workload


def fuzz_count() -> int:
    """Bad events per test: ``FUZZ_EVENTS``, 1,000 by default (CI: 4,000 over four tests);
    `make fuzz` runs the four tests with 3,400 each."""
    return int(os.environ.get("FUZZ_EVENTS", "1000"))


def _dead_letters(m: Mirrored) -> list[tuple[bytes, str]]:
    rows = m.spark.sql(f"SELECT value, error FROM {m.dead_letter} WHERE topic = '{m.topic}'")
    return [(bytes(r.value), str(r.error or "")) for r in rows.collect()]


def fuzz_bad_events(m: Mirrored, fmt: str, seed: int, count: int) -> list[Bad]:
    records = [v for _, v in services.all_records(m.topic) if v]
    if fmt == "avro":
        return avro_fuzz([v for v in records[-200:] if v[0] == 0], count, seed)
    schemas = fmt == "json"
    table = load_tables(m.config, load_catalog(m.config))[0]

    def op(value: bytes) -> str | None:
        event = json.loads(value)
        return (event["payload"] if schemas else event).get("op")  # type: ignore[no-any-return]

    real = next(json.loads(v) for v in reversed(records) if op(v) in ("c", "u", "r"))
    return json_fuzz(real, table, schemas, count, seed, FIRST_KEY)


def fuzzed_events_are_dead_lettered(
    m: Mirrored, fmt: str, seed: int, count: int | None = None
) -> dict[str, int]:
    """Runs the fuzzed batch (``count`` bad events, ``fuzz_count()`` by default); returns
    the bad events per kind."""
    m.workload.run(100)
    settle(m)
    m.mirror()
    bad = fuzz_bad_events(m, fmt, seed, fuzz_count() if count is None else count)
    before = Counter(value for value, _ in _dead_letters(m))
    producer = Producer({"bootstrap.servers": services.KAFKA, "linger.ms": 20})
    for start in range(0, len(bad), CHUNK):
        for b in bad[start : start + CHUNK]:
            producer.produce(m.topic, key=b'{"id": 0}', value=b.value)
        producer.flush(30)
        m.workload.run(15)
    settle(m)
    m.mirror()  # returns: no crash, no crash loop (one run of every batch there is)
    letters = _dead_letters(m)
    now = Counter(value for value, _ in letters)
    added = now - before
    wanted = Counter(b.value for b in bad)
    missing = wanted - added
    kinds = {b.value: b.kind for b in bad}
    assert not missing, [(kinds[v], v[:200]) for v in list(missing)[:10]]
    assert not added - wanted, [v[:200] for v in list(added - wanted)[:10]]
    no_reason = [v[:200] for v, error in letters if v in wanted and not error.strip()]
    assert not no_reason, no_reason[:10]
    m.assert_same()
    return dict(Counter(b.kind.split(" ")[0] if b.kind.startswith("column") else b.kind
                        for b in bad))  # fmt: skip
