"""Send Debezium a signal through the source's signal table (SQLAlchemy)."""

from __future__ import annotations

from typing import Any

from cdcmirror import dialects
from cdcmirror.exceptions import SourceError


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
