"""Source tables and columns as plain data: what discovery finds and the type mapping reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SourceType:
    """A column type with the detail the mapping needs.

    ``name`` is the canonical lower-case type name (``numeric``, ``timestamptz``,
    ``bigint``, ``enum``); ``text`` is the type as the source catalog prints it.
    """

    name: str
    text: str
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    fsp: int | None = None  # fractional seconds precision of time types
    unsigned: bool = False
    values: tuple[str, ...] = ()  # enum / set members, in order
    element: SourceType | None = None  # array element type
    domain: str | None = None  # the PostgreSQL domain the column is declared with

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "text": self.text}
        for key in ("length", "precision", "scale", "fsp", "domain"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.unsigned:
            out["unsigned"] = True
        if self.values:
            out["values"] = list(self.values)
        if self.element is not None:
            out["element"] = self.element.as_dict()
        return out


@dataclass(frozen=True)
class SourceColumn:
    name: str
    type: SourceType
    nullable: bool = True
    default: str | None = None
    comment: str | None = None


@dataclass(frozen=True)
class SourceTable:
    """One table of the source. ``key`` is empty for a table without a usable key."""

    schema: str
    name: str
    columns: tuple[SourceColumn, ...]
    key: tuple[str, ...] = ()
    key_source: str = "none"  # "primary key", "unique index <name>" or "none"
    partitioned: bool = False
    comment: str | None = None

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    def column(self, name: str) -> SourceColumn:
        return next(c for c in self.columns if c.name == name)


@dataclass(frozen=True)
class SourceCatalog:
    """What discovery found: the included tables and facts about the server."""

    dialect: str  # "postgresql" or "mysql"
    flavor: str  # "postgresql", "mysql" or "mariadb"
    server_version: str
    database: str
    user: str
    tables: tuple[SourceTable, ...]
    skipped: tuple[str, ...] = field(default=())  # keyless tables left out by the setting
    published: frozenset[str] | None = None  # PostgreSQL: tables in the publication
    signal_table: str | None = None  # Debezium's signal table, when it exists at the source
