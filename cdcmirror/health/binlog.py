"""Does every change of a MySQL/MariaDB source reach Kafka? The binlog settings
(``source/binlog_settings.py``) and the connector's position in the server's binlog history
(``mirror/binlog_history.py``), in one message for ``check``, ``reconcile`` and the
mirror's watch."""

from __future__ import annotations

import logging
from typing import Any

from cdcmirror.clients.connect import ConnectClient
from cdcmirror.config.settings import Connect
from cdcmirror.exceptions import CdcMirrorError
from cdcmirror.mirror.binlog_history import offset_problem
from cdcmirror.source.binlog_settings import binlog_problems, read_binary_logs, read_binlog_settings

logger = logging.getLogger(__name__)


def connector_position(client: ConnectClient, connector: str) -> tuple[str, int] | None:
    """The connector's committed binlog file and position; None before it has one, when it
    is not registered, or when Connect cannot be asked (``connector_problem`` and ``check``
    report that)."""
    try:
        if connector not in client.names():
            return None
        entries = client.offsets(connector)
    except CdcMirrorError as exc:
        logger.warning("connector %s: its offsets cannot be read: %s", connector, exc)
        return None
    for entry in entries:
        offset = entry.get("offset") or {}
        if offset.get("file") and offset.get("pos") is not None:
            return str(offset["file"]), int(offset["pos"])
    return None


def binlog_health(engine: Any, connect: Connect, connector: str) -> str | None:
    """Everything that loses changes before they reach Kafka, None when nothing does."""
    # the offset first: the server's files read after it can only be longer or newer
    position = connector_position(ConnectClient.of(connect, timeout=10.0), connector)
    with engine.connect() as conn:
        problems = binlog_problems(read_binlog_settings(conn))
        if position is not None:
            behind = offset_problem(connector, position[0], position[1], read_binary_logs(conn))
            if behind:
                problems.append(behind)
    if not problems:
        return None
    return "the source's binlog loses changes for the mirror: " + "; ".join(problems)
