"""Discovery of PostgreSQL tables: SQLAlchemy's inspector for keys, catalog queries for the
column types it does not describe fully (domains, enums, arrays, type modifiers)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cdcmirror.dialects.postgresql import PUBLICATION
from cdcmirror.source.keys import UniqueIndex, choose_key
from cdcmirror.source.type_parsing import parse_postgresql_type
from cdcmirror.source_model import SourceColumn, SourceTable, SourceType

_COLUMNS = """
SELECT n.nspname, c.relname, c.relkind, obj_description(c.oid, 'pg_class'),
       has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT'),
       a.attname, format_type(a.atttypid, a.atttypmod), t.typtype, t.oid, t.typelem,
       t.typcategory, a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
       col_description(c.oid, a.attnum)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
ORDER BY n.nspname, c.relname, a.attnum
"""

# Every domain and enum of the database: few rows, read once.
_TYPES = """
SELECT t.oid, t.typname, t.typtype, t.typbasetype, format_type(t.typbasetype, t.typtypmod),
       (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e
        WHERE e.enumtypid = t.oid)
FROM pg_type t WHERE t.typtype IN ('d', 'e')
"""


class _Types:
    """Resolves a column's type: domains to their base type, enums with their labels."""

    def __init__(self, rows: list[Any]) -> None:
        self.by_oid = {r[0]: r for r in rows}

    def resolve(self, oid: int, text: str, typtype: str, domain: str | None = None) -> SourceType:
        if typtype == "e":
            labels = tuple(self.by_oid[oid][5] or ())
            return SourceType(name="enum", text=text, values=labels, domain=domain)
        if typtype == "d":
            _, name, _, base_oid, base_text, _ = self.by_oid[oid]
            base = self.by_oid.get(base_oid)
            base_typtype = base[2] if base else "b"
            return self.resolve(base_oid, base_text, base_typtype, domain or name)
        if typtype in ("c", "p", "m"):  # composite, pseudo, multirange: not mapped
            return SourceType(name=f"{text} (composite)" if typtype == "c" else text, text=text)
        return replace(parse_postgresql_type(text), domain=domain)


def discover(
    conn: Any, inspector: Any, wanted: Any
) -> tuple[list[SourceTable], dict[str, bool], set[str]]:
    """(tables for which ``wanted(schema.table)`` holds, readable per table, schemas)."""
    from sqlalchemy import text

    types = _Types(list(conn.execute(text(_TYPES))))
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for row in conn.execute(text(_COLUMNS)):
        schema, table, relkind, tcomment, readable = row[0:5]
        if not wanted(f"{schema}.{table}"):
            continue
        name, type_text, typtype, type_oid, elem_oid, category, notnull, default, ccomment = row[5:]
        entry = grouped.setdefault(
            (schema, table),
            {"partitioned": relkind == "p", "comment": tcomment, "readable": readable, "cols": []},
        )
        if category == "A" and elem_oid:
            element_text = type_text[: type_text.index("[")] if "[" in type_text else type_text
            elem = types.by_oid.get(elem_oid)
            element = types.resolve(elem_oid, element_text, elem[2] if elem else "b")
            stype = SourceType(name="array", text=type_text, element=element)
        else:
            stype = types.resolve(type_oid, type_text, typtype)
        entry["cols"].append(SourceColumn(name, stype, not notnull, default, ccomment))
    schemas = {
        r[0]
        for r in conn.execute(
            text(
                "SELECT nspname FROM pg_namespace WHERE nspname NOT IN "
                "('pg_catalog', 'information_schema') AND nspname NOT LIKE 'pg\\_%'"
            )
        )
    }
    tables = []
    for schema in sorted({s for s, _ in grouped}):
        names = [t for s, t in grouped if s == schema]
        pks = inspector.get_multi_pk_constraint(schema=schema, filter_names=names)
        indexes = inspector.get_multi_indexes(schema=schema, filter_names=names)
        for table in names:
            entry = grouped[(schema, table)]
            cols = tuple(entry["cols"])
            uniques = _unique_indexes(indexes.get((schema, table), []))
            pk = tuple(pks.get((schema, table), {}).get("constrained_columns") or ())
            key, key_source = choose_key(pk, uniques, {c.name for c in cols if not c.nullable})
            tables.append(
                SourceTable(
                    schema, table, cols, key, key_source, entry["partitioned"], entry["comment"]
                )
            )
    readable = {f"{s}.{t}": bool(e["readable"]) for (s, t), e in grouped.items()}
    return tables, readable, schemas


def _unique_indexes(indexes: list[Any]) -> list[UniqueIndex]:
    """The unique indexes SQLAlchemy reports; one with an expression or a WHERE is unusable."""
    return [
        UniqueIndex(
            i["name"],
            tuple(c for c in i["column_names"] if c is not None),
            usable=None not in i["column_names"]
            and not i.get("dialect_options", {}).get("postgresql_where"),
        )
        for i in indexes
        if i.get("unique")
    ]


def published_tables(conn: Any) -> frozenset[str]:
    """``schema.table`` of every table in the cdcmirror publication."""
    from sqlalchemy import text

    rows = conn.execute(
        text("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = :p"),
        {"p": PUBLICATION},
    )
    return frozenset(f"{s}.{t}" for s, t in rows)
