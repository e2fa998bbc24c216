"""Which batches of CDC tables skip the first look (``spark/cdc/plan.planned``): only CDC
tables' topics moved, each table reads its own records, once when in row schemas the job
applied to the table as it is (else in those of its first records)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cdcmirror.checkpoint_store import SCHEMAS_FILE, CheckpointFiles, remembered_schemas
from cdcmirror.mirror.checkpoint import Ranges
from cdcmirror.mirror.known_schemas import MAX_KNOWN, KnownSchemas
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable
from cdcmirror.spark.cdc.plan import BatchPlan, ReadMode, TopicBatch
from cdcmirror.spark.cdc.plan import planned as own_plan
from cdcmirror.spark.kafka import range_offsets
from cdcmirror.spark.streams.apply import StreamTable
from cdcmirror.streams.spec import StreamSpec
from support.tables import NAME, make_table

TABLE = make_table(NAME)
OTHER = replace(TABLE, identifier="ns.other", topic="src.s.other", source="s.other")
TABLES = {TABLE.topic: TABLE, OTHER.topic: OTHER}
CLICKS = StreamTable(
    StreamSpec(0, "ns.clicks", "json", "infer", topic_pattern="clicks\\..*"), "ns.clicks", ()
)
STREAMS = {CLICKS.identifier: CLICKS}


def planned(ranges: Ranges) -> dict[int, Ranges]:
    return {7: ranges}


def known_items(*schemas: str) -> KnownSchemas:
    known = KnownSchemas()
    known.learn(TABLE, set(schemas), True)
    return known


def tables_of(plan: BatchPlan | None) -> list[tuple[MirrorTable, TopicBatch]]:
    assert plan is not None and plan.own_reads
    return list(plan.tables)


def test_a_batch_of_one_table_in_known_schemas_is_read_once() -> None:
    ranges = {TABLE.topic: {0: (10, 70), 1: (5, 5)}, OTHER.topic: {0: (3, 3)}}
    found = tables_of(own_plan(TABLES, {}, planned(ranges).get, 7, known_items("s1", "s2")))
    assert len(found) == 1
    table, batch = found[0]
    assert table == TABLE
    assert batch.mode is ReadMode.KNOWN and batch.schemas == {"s1", "s2"}
    assert batch.offsets == {0: 69} and batch.starts == {0: 10}
    assert batch.ranges == {TABLE.topic: {0: (10, 70)}}  # the partition that moved


def test_each_table_and_stream_of_a_batch_reads_its_own_ranges() -> None:
    ranges = {
        TABLE.topic: {0: (10, 70)},
        OTHER.topic: {0: (3, 4), 1: (0, 2)},
        "clicks.eu": {0: (7, 9)},
        "clicks.us": {0: (1, 2)},
    }
    plan = own_plan(TABLES, STREAMS, planned(ranges).get, 7, known_items("s1"))
    assert plan is not None and plan.own_reads
    by_table = dict(plan.tables)
    assert by_table[TABLE].mode is ReadMode.KNOWN
    assert by_table[TABLE].ranges == {TABLE.topic: ranges[TABLE.topic]}
    other = by_table[OTHER]  # no schema of it known: read in those of its first records
    assert other.mode is ReadMode.GUESSED and other.schemas == frozenset()
    assert other.ranges == {OTHER.topic: ranges[OTHER.topic]} and other.events == 3
    [stream] = plan.streams
    assert stream.table == CLICKS and set(stream.topics) == {"clicks.eu", "clicks.us"}
    assert stream.ranges == {t: ranges[t] for t in ("clicks.eu", "clicks.us")}


def test_a_stream_alone_reads_the_batch() -> None:
    clicks = {"clicks.eu": {0: (0, 5)}}
    plan = own_plan(TABLES, STREAMS, planned(clicks).get, 7, None)
    assert plan is not None and not plan.tables and len(plan.streams) == 1


def test_batches_of_unknown_ranges_or_other_topics_take_the_first_look() -> None:
    known = known_items("s1")
    both = {TABLE.topic: {0: (10, 70)}, OTHER.topic: {0: (3, 4)}}
    assert own_plan(TABLES, {}, planned(both).get, 8, known) is None  # not in the log
    assert own_plan(TABLES, {}, None, 7, known) is None
    stranger = {TABLE.topic: {0: (10, 70)}, "not.a.table": {0: (0, 5)}}
    assert own_plan(TABLES, STREAMS, planned(stranger).get, 7, known) is None
    unknown_start = {TABLE.topic: {0: (-2, 70)}}
    assert own_plan(TABLES, {}, planned(unknown_start).get, 7, known) is None
    assert own_plan(TABLES, {}, {0: unknown_start}.get, 0, known) is not None  # from earliest


def test_offset_ranges_as_spark_reads_them() -> None:
    assign, starting, ending = range_offsets({"a": {1: (5, 9), 0: (-2, 3)}, "b": {0: (0, 1)}})
    assert assign == '{"a": [0, 1], "b": [0]}'
    assert starting == '{"a": {"0": -2, "1": 5}, "b": {"0": 0}}'
    assert ending == '{"a": {"0": 3, "1": 9}, "b": {"0": 1}}'


def test_schemas_are_known_for_the_columns_the_table_had_when_it_took_them() -> None:
    only = {OTHER.topic: {0: (10, 70)}}
    known = known_items("s1")
    found = tables_of(own_plan(TABLES, {}, planned(only).get, 7, known))
    assert found[0][1].mode is ReadMode.GUESSED  # nothing known of OTHER
    assert known.of(TABLE) == frozenset({"s1"})
    known.learn(TABLE, {"s2"}, True)
    assert known.of(TABLE) == frozenset({"s1", "s2"})
    wider = replace(TABLE, columns=(*TABLE.columns, MirrorColumn("extra", "int", "int32")))
    assert known.of(wider) is None  # evolved since: its schemas are learnt again
    known.learn(wider, {"s3"}, True)
    assert known.of(wider) == frozenset({"s3"}) and known.of(TABLE) is None
    known.learn(wider, {"s3", "s4"}, False)  # one was rejected: no schema counts
    assert known.of(wider) is None


def test_too_many_schemas_are_not_checked_per_event() -> None:
    known = known_items(*(f"s{i}" for i in range(MAX_KNOWN)))
    assert known.of(TABLE) is not None
    known.learn(TABLE, {"one more"}, True)
    assert known.of(TABLE) is None


def test_the_schemas_are_remembered_in_the_checkpoint_across_runs(tmp_path: Path) -> None:
    files = CheckpointFiles(str(tmp_path / "checkpoint"), {})
    first = remembered_schemas(files)
    assert first.of(TABLE) is None  # a new checkpoint: nothing known
    first.learn(TABLE, {"s1"}, True)
    assert SCHEMAS_FILE in files.names("")
    again = remembered_schemas(files)
    assert again.of(TABLE) == frozenset({"s1"})
    again.learn(TABLE, {"s2"}, False)  # a rejected schema: the next run knows none
    assert remembered_schemas(files).of(TABLE) is None


def test_a_checkpoint_file_that_cannot_be_read_costs_the_first_look_only(tmp_path: Path) -> None:
    files = CheckpointFiles(str(tmp_path), {})
    files.write(SCHEMAS_FILE, '{"ns.items": {"columns": 3}}')
    assert remembered_schemas(files).of(TABLE) is None
