"""Debezium's signal table at the source (SQLAlchemy): send a signal, find the table, empty
it when the mirror is torn down."""

from __future__ import annotations

import logging
from typing import Any

from cdcmirror import dialects
from cdcmirror.exceptions import SourceError

logger = logging.getLogger(__name__)


def insert_signal(
    engine: Any, dialect: str, table: str, signal_id: str, kind: str, data: str
) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    target = dialects.of(dialect).table_sql(table)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(f"INSERT INTO {target} (id, type, data) VALUES (:id, :type, :data)"),
                {"id": signal_id, "type": kind, "data": data},
            )
    except DBAPIError as exc:
        detail = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise SourceError(
            f"cannot write Debezium's signal table {table}: {detail}. The connector user needs "
            f"INSERT on it (sql/{dialect}/signal_table.sql grants it)"
        ) from None


def existing_signal_table(engine: Any, qualified: str) -> str | None:
    """``qualified`` (schema.table) when the source has that table, else None."""
    from sqlalchemy import inspect

    schema, _, table = qualified.partition(".")
    with engine.connect() as conn:
        return qualified if inspect(conn).has_table(table, schema=schema) else None


def empty_signal_table(engine: Any, table: str) -> None:
    """Delete the signal rows; a source user that may only insert them leaves them (said in
    the log, with the statement a DBA can run)."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    with engine.connect() as conn:
        try:
            conn.execute(text(f"DELETE FROM {table}"))  # a name from the catalog
            conn.commit()
        except DBAPIError as exc:
            logger.warning(
                "signal rows of %s stay: the source user may not delete them (%s); a DBA can "
                "run DELETE FROM %s",
                table,
                str(exc.orig).splitlines()[0],
                table,
            )
