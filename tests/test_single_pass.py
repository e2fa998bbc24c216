"""Which batches of a CDC table are read once (``spark/single_pass.py``): one table's topic
moved, in row schemas the job applied to the table as it is."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cdcmirror.checkpoint_store import SCHEMAS_FILE, CheckpointFiles, remembered_schemas
from cdcmirror.mirror.checkpoint import Ranges
from cdcmirror.mirror.known_schemas import MAX_KNOWN, KnownSchemas
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable
from cdcmirror.spark.single_pass import one_table

COLUMNS = (MirrorColumn("id", "long", "int64"), MirrorColumn("name", "string", "string"))
TABLE = MirrorTable("ns.items", "src.s.items", "postgresql", "s.items", ("id",), "upsert", COLUMNS)
OTHER = replace(TABLE, identifier="ns.other", topic="src.s.other", source="s.other")
TABLES = {TABLE.topic: TABLE, OTHER.topic: OTHER}


def planned(ranges: Ranges) -> dict[int, Ranges]:
    return {7: ranges}


def known_items(*schemas: str) -> KnownSchemas:
    known = KnownSchemas()
    known.learn(TABLE, set(schemas), True)
    return known


def test_a_batch_of_one_table_in_known_schemas_is_read_once() -> None:
    ranges = {TABLE.topic: {0: (10, 70), 1: (5, 5)}, OTHER.topic: {0: (3, 3)}}
    found = one_table(TABLES, {}, planned(ranges).get, 7, known_items("s1", "s2"))
    assert found is not None
    table, parts = found
    assert table == TABLE
    assert parts["read_once"] and parts["schemas"] == {"s1", "s2"}
    assert parts["offsets"] == {0: 69} and parts["starts"] == {0: 10}


def test_batches_of_two_tables_or_unknown_ranges_take_the_first_look() -> None:
    known = known_items("s1")
    both = {TABLE.topic: {0: (10, 70)}, OTHER.topic: {0: (3, 4)}}
    assert one_table(TABLES, {}, planned(both).get, 7, known) is None
    assert one_table(TABLES, {}, planned(both).get, 8, known) is None  # not in the log
    assert one_table(TABLES, {}, None, 7, known) is None
    only = {TABLE.topic: {0: (10, 70)}}
    assert one_table(TABLES, {}, planned(only).get, 7, None) is None  # Avro, schemaless


def test_schemas_are_known_for_the_columns_the_table_had_when_it_took_them() -> None:
    only = {OTHER.topic: {0: (10, 70)}}
    known = known_items("s1")
    assert one_table(TABLES, {}, planned(only).get, 7, known) is None  # nothing of OTHER
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
