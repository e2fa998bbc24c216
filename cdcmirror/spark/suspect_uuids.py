"""The batch's MariaDB UUID values that may have arrived shifted (``mirror/mariadb_uuid.py``),
reported with some of their keys."""

from __future__ import annotations

import logging
from typing import Any

from cdcmirror.mirror.envelope import q
from cdcmirror.mirror.mariadb_uuid import SAMPLE_KEYS, suspect_message, suspect_sql
from cdcmirror.mirror.spec import MirrorTable

logger = logging.getLogger(__name__)


def report_suspect_uuids(decoded: Any, table: MirrorTable, count: int) -> None:
    """Logs the error line naming up to ``SAMPLE_KEYS`` keys of the ``count`` suspect
    events (applicable events of ``decoded`` that ``suspect_sql`` picks)."""
    keys: list[str] = []
    if table.key:  # a keyless table has none to name (`reconcile --deep` finds the rows)
        where = f"_cdc_error IS NULL AND ({suspect_sql(table)})"
        rows = decoded.where(where).select(*[q(k) for k in table.key]).distinct()
        keys = [
            ", ".join(f"{k}={row[k]}" for k in table.key)
            for row in rows.limit(SAMPLE_KEYS).collect()
        ]
    logger.error("%s", suspect_message(table.identifier, count, keys, table))
