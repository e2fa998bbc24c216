"""History (``mirror/history.py``) written by the mirror's own batch code from the recorded
Debezium events (``fixtures/debezium/``): snapshot reads, a create, an update whose TOAST
value is unchanged (PostgreSQL: a placeholder), deletes, a key change and a TRUNCATE, in
one batch and one event per batch. Every version the recorded statements made must be in
the history with the source's values, chained by position, the current ones equal to the
mirrored table; a replay must add nothing; the TRUNCATE must close every current version."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any

import pytest

from cdcmirror.mirror.spec import MirrorTable
from support.golden import FIXTURES, kafka_records, recorded_table, text
from support.golden_apply import (
    NAMESPACE,
    Batches,
    applier_of,
    rows_of,
    snapshots_of,
    split_at_truncate,
)
from support.iceberg_tables import create_history, create_mirrored
from support.spark import SparkWorld

Version = tuple[str, dict[str, str | None], bool]  # op, row, deleted (ended by a delete)


def _wanted_versions(data: dict[str, Any]) -> dict[str, list[Version]]:
    """Each key's versions as the recorded statements made them, in order: the snapshot's
    rows, then each create and update; a delete ends its key's last one."""
    out: dict[str, list[Version]] = {
        k: [("r", dict(v), False)] for k, v in data["snapshot"].items()
    }
    for e in data["expected"]:
        key = str(e["key"])
        if e["op"] == "d":
            op, row, _ = out[key][-1]
            out[key][-1] = (op, row, True)
        elif e["op"] in ("c", "u"):
            out.setdefault(key, []).append((e["op"], dict(e["row"]), False))
    return out


def _versions(spark: Any, table: MirrorTable) -> list[dict[str, Any]]:
    got = spark.sql(f"SELECT * FROM {table.history} ORDER BY _cdc_valid_from").collect()
    return [r.asDict() for r in got]


def _check_chains(versions: list[dict[str, Any]], table: MirrorTable) -> None:
    """Per key: ordered by start, each end the next start, at most one current, and that
    one open."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for v in versions:
        by_key.setdefault(text(v[table.key[0]]) or "", []).append(v)
    for key, chain in by_key.items():
        for a, b in itertools.pairwise(chain):
            assert a["_cdc_valid_to"] is not None, (key, a)
            assert not a["_cdc_is_current"], (key, a)
            if not a["_cdc_deleted"]:
                assert a["_cdc_valid_to"] == b["_cdc_valid_from"], (key, a, b)
            else:
                assert a["_cdc_valid_to"] <= b["_cdc_valid_from"], (key, a, b)
        assert sum(1 for v in chain if v["_cdc_is_current"]) <= 1, key
        last = chain[-1]
        assert last["_cdc_is_current"] == (last["_cdc_valid_to"] is None), (key, last)


def _as_wanted(versions: list[dict[str, Any]], table: MirrorTable) -> dict[str, list[Version]]:
    names = [c.name for c in table.columns]
    out: dict[str, list[Version]] = {}
    for v in versions:
        row = {n: text(v[n]) for n in names}
        out.setdefault(text(v[table.key[0]]) or "", []).append(
            (v["_cdc_op"], row, bool(v["_cdc_deleted"]))
        )
    return out


@pytest.mark.parametrize(
    ("recording", "per_event", "soft"),
    [
        ("postgresql-json", False, False),
        ("postgresql-json", True, False),
        ("mysql-json", False, False),
        ("mysql-json", True, False),
        ("postgresql-json", False, True),
        ("mysql-json", True, True),
        ("postgresql-avro", False, False),
        ("mysql-avro", False, False),
    ],
    ids=["pg-one-batch", "pg-an-event-a-batch", "mysql-one-batch", "mysql-an-event-a-batch",
         "pg-soft-deletes", "mysql-soft-deletes-an-event-a-batch", "pg-avro", "mysql-avro"],
)  # fmt: skip
def test_recorded_events_make_every_version(
    spark_world: SparkWorld, recording: str, per_event: bool, soft: bool
) -> None:
    spark = spark_world.spark
    data = json.loads((FIXTURES / f"{recording}.json").read_text())
    mode = f"{'each' if per_event else 'one'}{'_soft' if soft else ''}"
    name = f"{NAMESPACE}.h_{recording.replace('-', '_')}_{mode}"
    table = replace(recorded_table(data["table"]), identifier=name)
    create_mirrored(spark, table)
    table = create_history(spark, table, name + "__history")
    applier = applier_of(spark, data, table, soft)
    before, after = split_at_truncate(data)
    apply = Batches(spark, applier).apply

    apply(before, per_event)
    versions = _versions(spark, table)
    _check_chains(versions, table)
    assert _as_wanted(versions, table) == _wanted_versions(data)
    current = {
        text(v[table.key[0]]): {c.name: text(v[c.name]) for c in table.columns}
        for v in versions
        if v["_cdc_is_current"]
    }
    assert current == rows_of(spark, table)

    committed = snapshots_of(spark, replace(table, identifier=table.history or ""))
    apply(before)  # a replay: nothing new
    assert _versions(spark, table) == versions
    assert snapshots_of(spark, replace(table, identifier=table.history or "")) == committed

    apply(after)  # the TRUNCATE closes every current version, as deleted, at its position
    truncated = _versions(spark, table)
    assert not any(v["_cdc_is_current"] for v in truncated)
    was_current = {tuple(v["_cdc_valid_from"]) for v in versions if v["_cdc_is_current"]}
    closed = [v for v in truncated if tuple(v["_cdc_valid_from"]) in was_current]
    assert len(closed) == len(was_current) == len(current)
    assert len({tuple(v["_cdc_valid_to"]) for v in closed}) == 1, closed
    assert all(v["_cdc_deleted"] for v in closed)
    _check_chains(truncated, table)
    apply(before + after)  # a replay of everything, the TRUNCATE too
    assert _versions(spark, table) == truncated


def test_history_made_beside_a_table_with_rows_starts_from_them(spark_world: SparkWorld) -> None:
    """History turned on for a table the mirror has filled: its first batch first takes the
    table's rows as they stand as their keys' first versions, then adds its own."""
    spark = spark_world.spark
    data = json.loads((FIXTURES / "mysql-json.json").read_text())
    name = f"{NAMESPACE}.h_later"
    plain = replace(recorded_table(data["table"]), identifier=name)
    create_mirrored(spark, plain)
    before, _ = split_at_truncate(data)
    first, rest = before[:3], before[3:]
    applier_of(spark, data, plain).process(kafka_records(spark, first), 0)
    stored = rows_of(spark, plain)
    assert stored, "the first records made rows"
    table = create_history(spark, plain, name + "__history")
    applier_of(spark, data, table).process(kafka_records(spark, rest), 1)
    versions = _versions(spark, table)
    _check_chains(versions, table)
    firsts: dict[str, dict[str, str | None]] = {}
    for v in versions:
        firsts.setdefault(
            text(v[table.key[0]]) or "", {c.name: text(v[c.name]) for c in table.columns}
        )
    for key, row in stored.items():
        assert firsts[key] == row, key  # each stored row is its key's first version
    current = {
        text(v[table.key[0]]): {c.name: text(v[c.name]) for c in table.columns}
        for v in versions
        if v["_cdc_is_current"]
    }
    assert current == rows_of(spark, table)


def _payload(r: dict[str, Any]) -> dict[str, Any]:
    import base64

    return dict(json.loads(base64.b64decode(r["value"])))


def _with_payload(r: dict[str, Any], value: dict[str, Any], offset: int) -> dict[str, Any]:
    import base64

    return {**r, "value": base64.b64encode(json.dumps(value).encode()).decode(), "offset": offset}


def _rereads(before: list[dict[str, Any]], current: set[str]) -> list[dict[str, Any]]:
    """The recording's snapshot reads of the keys still current, read again while the table
    streams (Debezium's incremental snapshot, as ``cdcmirror repair`` asks for): after the
    newest recorded change, ``source.snapshot`` "incremental"."""
    last = max((r for r in before if r["value"]), key=lambda r: r["offset"])
    source = {**_payload(last)["payload"]["source"], "snapshot": "incremental"}
    out: list[dict[str, Any]] = []
    for r in before:
        if not r["value"] or _payload(r)["payload"]["op"] != "r":
            continue
        value = _payload(r)
        if str(value["payload"]["after"]["id"]) not in current:
            continue
        value["payload"]["source"] = source
        out.append(_with_payload(r, value, last["offset"] + 1 + len(out)))
    return out


def _read_again(reads: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    """``reads`` read again later (a later source position and offsets), the keys of
    ``names`` with that name (the source holds what the mirror missed)."""
    out = []
    for r in reads:
        value = _payload(r)
        source = value["payload"]["source"]
        if "lsn" in source:  # PostgreSQL: [last commit, LSN]
            source["lsn"] += 8
            sequence = json.loads(source["sequence"])
            sequence[1] = str(int(sequence[1]) + 8)
            source["sequence"] = json.dumps(sequence)
        else:
            source["pos"] += 8
        after = value["payload"]["after"]
        after["name"] = names.get(str(after["id"]), after["name"])
        out.append(_with_payload(r, value, r["offset"] + len(reads)))
    return out


@pytest.mark.parametrize("per_event", [False, True], ids=["one-batch", "a-read-a-batch"])
@pytest.mark.parametrize("recording", ["postgresql-json", "mysql-json"])
def test_rereads_make_a_repair_version_only_where_the_row_differed(
    spark_world: SparkWorld, recording: str, per_event: bool
) -> None:
    """Rows read again while the table streams (``cdcmirror repair``'s incremental
    snapshot): a read whose row differs from its key's version makes a version marked
    ``repair``; one equal to it adds nothing, so a table read again where the mirror was
    right keeps its history; a replay of the reads adds nothing."""
    spark = spark_world.spark
    data = json.loads((FIXTURES / f"{recording}.json").read_text())
    name = f"{NAMESPACE}.h_reread_{recording.replace('-', '_')}_{int(per_event)}"
    table = replace(recorded_table(data["table"]), identifier=name)
    create_mirrored(spark, table)
    table = create_history(spark, table, name + "__history")
    apply = Batches(spark, applier_of(spark, data, table)).apply
    before, _ = split_at_truncate(data)
    apply(before)

    def current() -> dict[str, dict[str, str | None]]:
        return {
            text(v[table.key[0]]) or "": {c.name: text(v[c.name]) for c in table.columns}
            for v in _versions(spark, table)
            if v["_cdc_is_current"]
        }

    def check(wanted: dict[str, list[Version]]) -> None:
        got = _versions(spark, table)
        _check_chains(got, table)
        assert _as_wanted(got, table) == wanted
        assert current() == rows_of(spark, table)

    # the snapshot's reads again: the keys changed since get their snapshot values back
    snapshot: dict[str, dict[str, str | None]] = data["snapshot"]
    now = current()
    reads = _rereads(before, set(now))
    wanted = _as_wanted(_versions(spark, table), table)
    for key in now.keys() & snapshot.keys():
        if snapshot[key] != now[key]:
            wanted[key].append(("repair", snapshot[key], False))
    apply(reads, per_event)
    check(wanted)
    assert reads and any(v[-1][0] == "repair" for v in wanted.values())

    # read again, one row different: a version of that row only
    drifted = min(now.keys() & snapshot.keys())
    later = _read_again(reads, {drifted: "drifted"})
    apply(later, per_event)
    wanted[drifted].append(("repair", {**snapshot[drifted], "name": "drifted"}, False))
    check(wanted)

    # read again, every row as it is: nothing new; a replay of every read: nothing new
    versions = _versions(spark, table)
    apply(_read_again(later, {}), per_event)
    apply(reads + later)
    assert _versions(spark, table) == versions

    # a TRUNCATE and, after it in the same batch, the rows read again as they were: each
    # read makes a version (the TRUNCATE ended the one it equals)
    _, after = split_at_truncate(data)
    truncate = next(r for r in after if r["value"])
    now = current()
    wanted = _as_wanted(versions, table)
    for key in now:
        op, row, _ = wanted[key][-1]
        wanted[key][-1] = (op, row, True)
    names = {key: str(row["name"]) for key, row in now.items()}
    reads = _read_again(_rereads([*before, truncate], set(now)), names)
    for key in now.keys() & snapshot.keys():
        assert {**snapshot[key], "name": names[key]} == now[key]  # read as it is
        wanted[key].append(("repair", now[key], False))
    apply([truncate, *reads])
    check(wanted)
