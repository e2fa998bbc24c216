"""docs/reference/type-mapping.md is the golden table of the type mapping: every row is
checked here."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdcmirror.exceptions import UnsupportedTypeError
from cdcmirror.source.type_parsing import parse_mysql_type, parse_postgresql_type
from cdcmirror.source_model import SourceType
from cdcmirror.typemap import MappingOptions, map_column
from support.type_mapping import source_type

DOC = Path(__file__).resolve().parents[1] / "docs" / "reference" / "type-mapping.md"


def _cell(text: str) -> str:
    return text.strip().replace("\\<", "<")


def doc_rows() -> list[tuple[str, str, str, str]]:
    rows = []
    for line in DOC.read_text("utf-8").splitlines():
        cells = [_cell(c) for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] in ("postgresql", "mysql"):
            rows.append((cells[0], cells[1], cells[2], cells[3]))
    return rows


ROWS = doc_rows()


def test_the_doc_has_the_rows() -> None:
    assert len([r for r in ROWS if r[0] == "postgresql"]) >= 45
    assert len([r for r in ROWS if r[0] == "mysql"]) >= 40


@pytest.mark.parametrize(
    ("dialect", "text", "iceberg", "carrier"), ROWS, ids=[f"{r[0]}:{r[1]}" for r in ROWS]
)
def test_doc_row_is_the_mapping(dialect: str, text: str, iceberg: str, carrier: str) -> None:
    mapping = map_column(dialect, "s.t.c", source_type(dialect, text))
    assert (mapping.iceberg, mapping.carrier) == (iceberg, carrier)


def test_tinyint1_setting_keeps_int() -> None:
    off = MappingOptions(tinyint1_as_boolean=False)
    assert map_column("mysql", "s.t.c", parse_mysql_type("tinyint(1)"), off).iceberg == "int"


@pytest.mark.parametrize(
    ("dialect", "text"),
    [("postgresql", "box"), ("postgresql", "tsquery"), ("postgresql", "integer[][]")],
)
def test_unknown_type_names_the_column_unless_mapped_to_string(dialect: str, text: str) -> None:
    t = parse_postgresql_type(text)
    if text == "integer[][]":  # arrays of arrays
        t = SourceType(name="array", text=text, element=SourceType(name="array", text="integer[]"))
    with pytest.raises(UnsupportedTypeError, match=r"shop\.orders\.c: type .*unknown_types"):
        map_column(dialect, "shop.orders.c", t)
    relaxed = map_column(dialect, "shop.orders.c", t, MappingOptions(unknown_types="string"))
    assert (relaxed.iceberg, relaxed.carrier) == ("string", "bytes")


@pytest.mark.parametrize("text", ["inet4", "inet6"])
def test_mariadb_inet_is_refused_even_as_string(text: str) -> None:
    with pytest.raises(UnsupportedTypeError, match=r"db\.t\.addr: type inet. cannot be mirrored"):
        map_column("mysql", "db.t.addr", parse_mysql_type(text), MappingOptions("string"))
