"""Discovery of MySQL / MariaDB tables: ``information_schema`` for the column types
(``COLUMN_TYPE`` carries length, precision, unsigned, enum values), SQLAlchemy's inspector
for primary keys and unique indexes. A schema here is a database."""

from __future__ import annotations

import warnings
from typing import Any

from cdcmirror import dialects
from cdcmirror.source.keys import UniqueIndex, choose_key
from cdcmirror.source.type_parsing import parse_mysql_type
from cdcmirror.source_model import SourceColumn, SourceTable

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")

_COLUMNS = """
SELECT c.TABLE_SCHEMA, c.TABLE_NAME, t.TABLE_COMMENT, c.COLUMN_NAME, c.COLUMN_TYPE,
       c.IS_NULLABLE, c.COLUMN_DEFAULT, c.COLUMN_COMMENT
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t
  ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
WHERE t.TABLE_TYPE = 'BASE TABLE'
  AND c.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME, c.ORDINAL_POSITION
"""


_MYSQL = dialects.of("mysql")


def discover(
    conn: Any, inspector: Any, wanted: Any
) -> tuple[list[SourceTable], dict[str, bool], set[str]]:
    """(tables for which ``wanted(schema.table)`` holds, readable per table, schemas)."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for schema, table, tcomment, name, ctype, nullable, default, ccomment in conn.execute(
        text(_COLUMNS)
    ):
        if not wanted(f"{schema}.{table}"):
            continue
        entry = grouped.setdefault((schema, table), {"comment": tcomment or None, "cols": []})
        if default == "NULL":  # MariaDB spells "no default" like this for nullable columns
            default = None
        entry["cols"].append(
            SourceColumn(
                name, parse_mysql_type(ctype), nullable == "YES", default, ccomment or None
            )
        )
    schemas = {
        r[0]
        for r in conn.execute(text("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA"))
        if r[0] not in SYSTEM_SCHEMAS
    }
    tables, readable = [], {}
    for schema, table in sorted(grouped):
        entry = grouped[(schema, table)]
        cols = tuple(entry["cols"])
        try:
            conn.execute(
                text(f"SELECT 1 FROM {_MYSQL.quote(schema)}.{_MYSQL.quote(table)} LIMIT 0")
            )
            readable[f"{schema}.{table}"] = True
        except DBAPIError:
            readable[f"{schema}.{table}"] = False
            conn.rollback()
        with warnings.catch_warnings():  # the inspector warns about spatial column types
            warnings.simplefilter("ignore")
            pk_info = inspector.get_pk_constraint(table, schema=schema)
            index_info = inspector.get_indexes(table, schema=schema)
        pk = tuple(pk_info.get("constrained_columns") or ())
        uniques = [
            UniqueIndex(
                i["name"],
                tuple(c for c in i["column_names"] if c is not None),
                usable=None not in i["column_names"],
            )
            for i in index_info
            if i.get("unique")
        ]
        key, key_source = choose_key(pk, uniques, {c.name for c in cols if not c.nullable})
        tables.append(SourceTable(schema, table, cols, key, key_source, False, entry["comment"]))
    return tables, readable, schemas
