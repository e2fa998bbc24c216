"""Discover the included source tables: the one entry point over both dialects."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cdcmirror import dialects
from cdcmirror.config.settings import Source
from cdcmirror.dialects.postgresql import PUBLICATION
from cdcmirror.exceptions import ConfigError, SourceError
from cdcmirror.source import include
from cdcmirror.source.connection import open_engine
from cdcmirror.source_model import SourceCatalog, SourceTable

logger = logging.getLogger(__name__)


def _server_facts(conn: Any, dialect: str) -> tuple[str, str, str, str]:
    """(flavor, version, database, user)."""
    from sqlalchemy import text

    d = dialects.of(dialect)
    version, database, user = conn.execute(text(d.server_facts_sql)).one()
    return d.flavor(str(version)), str(version), str(database), str(user)


SIGNAL_TABLE = "cdcmirror_signal"


def signal_table_name(source: Source, database: str) -> str:
    """Debezium's signal table (``schema.table``; MySQL ``database.table``): the
    ``source.signal_table`` setting, else ``cdcmirror_signal`` in ``public`` (PostgreSQL) or
    in the URL's database (MySQL/MariaDB). It is never mirrored itself.

    >>> from cdcmirror.config import load_config
    >>> signal_table_name(load_config(environ={}).source, "shop")
    'public.cdcmirror_signal'
    """
    configured = source.signal_table
    if configured:
        return configured
    return f"{dialects.of(source.dialect).default_schema(database)}.{SIGNAL_TABLE}"


@dataclass
class _Found:
    """What one look at the source found (``discover`` then checks it)."""

    flavor: str
    version: str
    database: str
    user: str
    tables: list[SourceTable]
    readable: dict[str, bool]
    schemas: set[str]
    has_signal: bool
    published: frozenset[str] | None = None
    unsafe: str | None = None


def discover(source: Source, *, require_safe_source: bool = False) -> SourceCatalog:
    """Every table ``source.include`` selects, with columns, types and keys.

    Fails (exit 2) when a pattern names a schema or table that does not exist, when no table
    matches, or when the connecting user cannot read an included table; nothing is written.
    ``require_safe_source`` (bootstrap): also when a published PostgreSQL table has no
    replica identity (``replica_identity.py``), or a MySQL/MariaDB binlog setting would lose
    changes (``binlog_settings.py``).
    """
    dialect = source.dialect
    patterns = list(source.include)
    problems = include.check_patterns(patterns)
    if problems:
        raise ConfigError("; ".join(problems))

    engine = open_engine(source)
    signal = signal_table_name(source, engine.url.database or "")
    try:
        with engine.connect() as conn:
            found = _look(conn, dialect, signal, patterns, require_safe_source)
    finally:
        engine.dispose()
    if found.unsafe:
        raise SourceError(found.unsafe)
    _check_found(found, dialect, patterns)
    kept: list[SourceTable] = []
    skipped: list[str] = []
    for table in found.tables:
        if table.key:
            kept.append(table)
        elif source.keyless_tables == "skip":
            logger.warning("%s has no primary key or usable unique index: skipped", table.qualified)
            skipped.append(table.qualified)
        else:
            logger.warning(
                "%s has no primary key or unique index over NOT NULL columns: mirrored "
                "append-only (every change is a new row)",
                table.qualified,
            )
            kept.append(table)
    return SourceCatalog(
        dialect=dialect,
        flavor=found.flavor,
        server_version=found.version,
        database=found.database,
        user=found.user,
        tables=tuple(kept),
        skipped=tuple(skipped),
        published=found.published,
        signal_table=signal if found.has_signal else None,
    )


def _look(conn: Any, dialect: str, signal: str, patterns: list[str], safe: bool) -> _Found:
    """The server's facts, the included tables and, with ``safe``, what would make the
    source unsafe to mirror."""
    from sqlalchemy import inspect

    from cdcmirror.source import binlog_settings, mysql, postgresql, replica_identity

    def wanted(name: str) -> bool:
        return name != signal and include.is_included(name, patterns)

    flavor, version, database, user = _server_facts(conn, dialect)
    inspector = inspect(conn)
    signal_schema, _, signal_name = signal.partition(".")
    has_signal = inspector.has_table(signal_name, schema=signal_schema)
    if dialects.of(dialect).slot:  # PostgreSQL: the publication decides what streams
        tables, readable, schemas = postgresql.discover(conn, inspector, wanted)
        found = _Found(flavor, version, database, user, tables, readable, schemas, has_signal)
        found.published = postgresql.published_tables(conn)
        if safe:
            found.unsafe = replica_identity.missing_identity_message(
                replica_identity.published_tables(conn, PUBLICATION),
                PUBLICATION,
            )
        return found
    tables, readable, schemas = mysql.discover(conn, inspector, wanted)
    found = _Found(flavor, version, database, user, tables, readable, schemas, has_signal)
    if safe:
        problems = binlog_settings.binlog_problems(binlog_settings.read_binlog_settings(conn))
        if problems:
            found.unsafe = "; ".join(problems) + ". Nothing was created"
    return found


def _check_found(found: _Found, dialect: str, patterns: list[str]) -> None:
    """Each schema and table ``source.include`` names exists and is readable, and some
    table matches."""
    where = f"{found.flavor} database {found.database!r}"
    user = found.user
    missing_schemas = [s for s in include.literal_schemas(patterns) if s not in found.schemas]
    if missing_schemas:
        raise SourceError(
            f"source.include names schema {', '.join(map(repr, missing_schemas))}, which the "
            f"{where} does not have (or user {user!r} cannot see); fix source.include"
        )
    names = {t.qualified for t in found.tables}
    for name in include.literal_tables(patterns):
        if name not in names:
            raise SourceError(
                f"source.include names table {name!r}: no such table in the {where}, or user "
                f"{user!r} cannot see it ({dialects.of(dialect).grant_hint(name, user)})"
            )
    unreadable = sorted(name for name, ok in found.readable.items() if not ok)
    if unreadable:
        raise SourceError(
            f"user {user!r} cannot read {', '.join(unreadable)} in the {where}; the initial "
            f"snapshot reads every table. Grant it, e.g. "
            f"{dialects.of(dialect).grant_hint(unreadable[0], user)}, or leave the table out of "
            "source.include"
        )
    if not found.tables:
        raise SourceError(
            f"source.include {patterns} matches no table in the {where}; fix source.include"
        )
