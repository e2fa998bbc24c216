"""PostgreSQL replica identity of the published tables (DESIGN.md rule 8: never harm the
source).

PostgreSQL refuses every UPDATE and DELETE on a table that a publication publishes updates or
deletes of when the table has no replica identity: no primary key with the default identity,
or identity NOTHING ("cannot update table ... because it does not have a replica identity and
publishes updates"). Publishing a schema (``sql/postgresql/publication.sql``) thus breaks the
application's statements on its keyless tables, mirrored or not. ``bootstrap`` checks every
published table (every partition of a published partitioned table) before it creates
anything and names the statement that fixes each: ``REPLICA IDENTITY USING INDEX`` over a
unique index of NOT NULL columns when there is one, else ``REPLICA IDENTITY FULL``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Every leaf table of the publication (a partitioned table's partitions), when it publishes
# updates or deletes, with its replica identity, whether it has a primary key, and its first
# unique index that can serve as replica identity (valid, immediate, no expression, no
# predicate, every column NOT NULL).
_PUBLISHED = """
WITH pub AS (
  SELECT DISTINCT (quote_ident(pt.schemaname) || '.' || quote_ident(pt.tablename))::regclass
         AS rel
  FROM pg_publication_tables pt JOIN pg_publication p ON p.pubname = pt.pubname
  WHERE pt.pubname = :publication AND (p.pubupdate OR p.pubdelete)
), leaves AS (  -- pg_partition_tree gives nothing for a plain table
  SELECT rel AS relid FROM pub
  UNION SELECT t.relid FROM pub, pg_partition_tree(pub.rel) t WHERE t.isleaf
)
SELECT n.nspname, c.relname, c.relreplident,
  EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary),
  (SELECT ic.relname FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
   WHERE i.indrelid = c.oid AND i.indisunique AND i.indisvalid AND i.indimmediate
     AND i.indpred IS NULL AND i.indexprs IS NULL
     AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid
                     AND a.attnum = ANY (i.indkey) AND NOT a.attnotnull)
   ORDER BY ic.relname LIMIT 1)
FROM leaves JOIN pg_class c ON c.oid = leaves.relid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r'
ORDER BY 1, 2
"""


@dataclass(frozen=True)
class PublishedTable:
    schema: str
    name: str
    identity: str  # pg_class.relreplident: d default, n nothing, f full, i index
    has_primary_key: bool
    usable_index: str | None


def quote_ident(name: str) -> str:
    """PostgreSQL identifier quoting, as ``quote_ident`` does it.

    >>> quote_ident("orders"), quote_ident("Order Items")
    ('orders', '"Order Items"')
    """
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


def fix_statement(table: PublishedTable) -> str | None:
    """The statement that gives ``table`` a replica identity, None when it has one.

    >>> fix_statement(PublishedTable("s", "log", "d", False, None))
    'ALTER TABLE s.log REPLICA IDENTITY FULL;'
    >>> fix_statement(PublishedTable("s", "users", "d", False, "users_email_key"))
    'ALTER TABLE s.users REPLICA IDENTITY USING INDEX users_email_key;'
    >>> fix_statement(PublishedTable("s", "orders", "d", True, "orders_pkey")) is None
    True
    """
    if table.identity in ("f", "i") or (table.identity == "d" and table.has_primary_key):
        return None
    name = f"{quote_ident(table.schema)}.{quote_ident(table.name)}"
    if table.usable_index:
        return f"ALTER TABLE {name} REPLICA IDENTITY USING INDEX {quote_ident(table.usable_index)};"
    return f"ALTER TABLE {name} REPLICA IDENTITY FULL;"


def published_tables(conn: Any, publication: str) -> list[PublishedTable]:
    from sqlalchemy import text

    rows = conn.execute(text(_PUBLISHED), {"publication": publication})
    return [PublishedTable(r[0], r[1], r[2], bool(r[3]), r[4]) for r in rows]


def missing_identity_message(tables: list[PublishedTable], publication: str) -> str | None:
    """Why bootstrap must stop, with the statements to run; None when every table is fine."""
    fixes = [(t, s) for t in tables if (s := fix_statement(t)) is not None]
    if not fixes:
        return None
    lines = "\n".join(f"  {s}" for _, s in fixes)
    return (
        f"{len(fixes)} table(s) in publication {publication!r} have no replica identity, so "
        "PostgreSQL refuses every UPDATE and DELETE on them while they are published "
        f"({', '.join(f'{t.schema}.{t.name}' for t, _ in fixes)}). Nothing was created. Run, "
        "as the tables' owner (USING INDEX keeps WAL small; FULL logs whole old rows):\n"
        f"{lines}\n"
        "or take their schema out of the publication; then run `cdcmirror bootstrap` again"
    )
