"""The source type of a row of ``docs/reference/type-mapping.md``, as discovery would read it."""

from __future__ import annotations

import re
from dataclasses import replace

from cdcmirror.source.type_parsing import parse_mysql_type, parse_postgresql_type
from cdcmirror.source_model import SourceType


def source_type(dialect: str, text: str) -> SourceType:
    """The SourceType discovery would produce for a row's source type cell."""
    if dialect == "mysql":
        return parse_mysql_type(text)
    if m := re.fullmatch(r"(\S+) \(enum\)", text):
        return SourceType(name="enum", text=m[1], values=("a", "b"))
    if m := re.fullmatch(r"(\S+) \(domain over (.+)\)", text):
        return replace(parse_postgresql_type(m[2]), domain=m[1])
    return parse_postgresql_type(text)
