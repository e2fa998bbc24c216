"""The initial load's pure parts: each type's reading (against docs/reference/type-mapping.md's
"spark load" column), the partitions (each row in exactly one, checked on SQLite), the
choice between Spark and Debezium, the connector's snapshot settings."""

from __future__ import annotations

import io
import json
import random
import sqlite3
from pathlib import Path

import pytest

from cdcmirror.bootstrap.connector import keep_snapshot_settings
from cdcmirror.cli.commands import show_load_progress
from cdcmirror.exceptions import NotLoadableError
from cdcmirror.load.partitions import (
    block_ranges,
    integer_ranges,
    partition_count,
    point_ranges,
)
from cdcmirror.load.plan import choose, load_columns, snapshot_mode
from cdcmirror.load.progress import TableProgress
from cdcmirror.source_model import SourceColumn, SourceType
from cdcmirror.typemap import map_column
from support.type_mapping import source_type

DOC = Path(__file__).resolve().parents[1] / "docs" / "reference" / "type-mapping.md"


def load_rows() -> list[tuple[str, str, str]]:
    """(dialect, source type, spark load) of every row of the mapping's table."""
    rows = []
    for line in DOC.read_text("utf-8").splitlines():
        cells = [c.strip().replace("\\<", "<") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[0] in ("postgresql", "mysql"):
            rows.append((cells[0], cells[1], cells[5]))
    return rows


ROWS = load_rows()


def test_every_row_says_whether_spark_loads_it() -> None:
    assert len(ROWS) >= 85
    assert {r[2] for r in ROWS} == {"yes", "no"}


@pytest.mark.parametrize(("dialect", "text", "loads"), ROWS, ids=[f"{r[0]}:{r[1]}" for r in ROWS])
def test_doc_row_is_the_load(dialect: str, text: str, loads: str) -> None:
    t = source_type(dialect, text)
    mapping = map_column(dialect, "s.t.c", t)
    column = [SourceColumn("c", t)]
    if loads == "yes":
        (read,) = load_columns(dialect, "s.t", column, [(mapping.iceberg, mapping.carrier)])
        assert read.select.endswith(" AS c0") and "c0" in read.convert
    else:
        with pytest.raises(NotLoadableError, match=r's\.t\.c: type .* initial_load = "debezium"'):
            load_columns(dialect, "s.t", column, [(mapping.iceberg, mapping.carrier)])


def test_unknown_types_load_as_their_text() -> None:
    t = SourceType("tsquery", "tsquery")
    (read,) = load_columns("postgresql", "s.t", [SourceColumn("q", t)], [("string", "bytes")])
    assert read.select == '"q"::text AS c0'


def _rows_in_each(conditions: list[str], values: list[object]) -> list[int]:
    """How many conditions select each value (SQLite evaluates them)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (k)")
    db.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    hits = {i: 0 for i in range(len(values))}
    for cond in conditions:
        sql = f"SELECT rowid - 1 FROM t WHERE {cond.replace('`k`', 'k')}"
        for (i,) in db.execute(sql):
            hits[i] += 1
    return list(hits.values())


@pytest.mark.parametrize("seed", range(5))
def test_integer_ranges_take_every_row_once(seed: int) -> None:
    rnd = random.Random(seed)
    values: list[object] = [rnd.randint(-1000, 1000) for _ in range(300)] + [None, None]
    ints = [v for v in values if isinstance(v, int)]
    parts = rnd.randint(1, 12)
    conditions = integer_ranges("`k`", min(ints), max(ints), parts)
    assert 1 <= len(conditions) <= parts
    # rows written after the bounds were read (beyond both ends) are read too
    assert _rows_in_each(conditions, [*values, -5000, 5000]) == [1] * (len(values) + 2)


def test_point_ranges_take_every_row_once() -> None:
    values: list[object] = ["a", "b", "b", "c", "m", "z", "", None]
    conditions = point_ranges("k", ["'b'", "'b'", "'m'"])
    assert len(conditions) == 3
    assert _rows_in_each(conditions, values) == [1] * len(values)


def test_block_ranges_cover_the_blocks_and_what_grows_after() -> None:
    assert block_ranges(1000, 4) == [
        "ctid < '(250,0)'::tid",
        "(ctid >= '(250,0)'::tid AND ctid < '(500,0)'::tid)",
        "(ctid >= '(500,0)'::tid AND ctid < '(750,0)'::tid)",
        "ctid >= '(750,0)'::tid",
    ]
    assert block_ranges(3, 8) == [
        "ctid < '(1,0)'::tid",
        "(ctid >= '(1,0)'::tid AND ctid < '(2,0)'::tid)",
        "ctid >= '(2,0)'::tid",
    ]


@pytest.mark.parametrize(
    ("rows", "per_part", "cores", "expected"),
    [
        (0, 500_000, 2, 1),
        (19_999, 500_000, 8, 1),
        (100_000, 500_000, 8, 8),
        (10**8, 500_000, 2, 200),
    ],
)
def test_partition_count(rows: int, per_part: int, cores: int, expected: int) -> None:
    assert partition_count(rows, per_part, cores) == expected


def test_auto_takes_spark_from_the_threshold_on() -> None:
    assert choose("auto", 200_000, 200_000) == "spark"
    assert choose("auto", 199_999, 200_000) == "debezium"
    assert choose("spark", 0, 200_000) == "spark"


def test_a_spark_load_makes_the_connector_stream_only() -> None:
    settings = snapshot_mode("spark")
    assert settings["snapshot.mode"] == "no_data"
    assert int(settings["heartbeat.interval.ms"]) > 0
    assert snapshot_mode("debezium") == {}


def test_a_registered_connector_keeps_how_it_started() -> None:
    wanted = {"snapshot.mode": "initial", "topic.prefix": "shop"}
    current = {"snapshot.mode": "no_data", "heartbeat.interval.ms": "2000", "name": "x"}
    assert keep_snapshot_settings(current, wanted) == {
        "snapshot.mode": "no_data",
        "topic.prefix": "shop",
        "heartbeat.interval.ms": "2000",
    }


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_json_lines_off_a_terminal_and_one_line_on_it() -> None:
    running = TableProgress("db.t", 1_000_000, 2, 8, 10.0)
    done = TableProgress("db.t", 1_000_000, 8, 8, 40.0, rows=999_000)
    piped = io.StringIO()
    show = show_load_progress(piped)
    show(running)
    show(done)
    lines = [json.loads(line) for line in piped.getvalue().splitlines()]
    assert [(x["rows"], x["eta_s"], x["done"]) for x in lines] == [
        (250_000, 30.0, False),
        (999_000, 0.0, True),
    ]
    assert lines[0]["rows_per_s"] == 25_000
    terminal = _Terminal()
    show = show_load_progress(terminal)
    show(running)
    show(done)
    text = terminal.getvalue()
    assert text.count("\n") == 1 and text.endswith("done\n")
    assert "2/8 reads, ETA 30 s" in text and "\r" in text
