"""PostgreSQL replication slots of cdcmirror: their state, the WAL they hold, dropping one.

An inactive slot keeps every WAL segment since its restart point: left behind by a removed
mirror it fills the source's disk. ``check`` and ``reconcile`` warn about one; ``teardown``
drops it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

SLOT_PREFIX = "cdcmirror_"

_SLOTS = """
SELECT slot_name, active,
       pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint AS retained
FROM pg_replication_slots WHERE slot_name LIKE 'cdcmirror\\_%' ORDER BY slot_name
"""


@dataclass(frozen=True)
class SlotState:
    name: str
    active: bool
    retained_bytes: int | None  # WAL the slot keeps from being removed


def size_text(n: int | None) -> str:
    """Bytes as people read them.

    >>> size_text(3 * 1024**3 + 1), size_text(2048), size_text(None)
    ('3.0 GiB', '2.0 KiB', 'an unknown amount of')
    """
    if n is None:
        return "an unknown amount of"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover - the loop returns first


def inactive_warning(slot: SlotState) -> str | None:
    """What to tell the user about an inactive cdcmirror slot; None for an active one.

    >>> inactive_warning(SlotState("cdcmirror_shop", False, 5 * 1024**2))[:60]
    'replication slot cdcmirror_shop is inactive and holds 5.0 Mi'
    """
    if slot.active:
        return None
    return (
        f"replication slot {slot.name} is inactive and holds {size_text(slot.retained_bytes)} "
        "of WAL, which grows until the source's disk is full: start its connector again, or "
        "remove the mirror with `cdcmirror teardown` (which drops the slot)"
    )


def cdcmirror_slots(engine: Any) -> list[SlotState]:
    from sqlalchemy import text

    with engine.connect() as conn:
        rows = conn.execute(text(_SLOTS)).fetchall()
    return [SlotState(r[0], bool(r[1]), None if r[2] is None else int(r[2])) for r in rows]


def drop_slot(engine: Any, name: str, wait_seconds: float = 60.0) -> bool:
    """Drop the slot once no connector holds it (its connector was just deleted); False when
    there is no such slot. Raises when it stays in use."""
    from sqlalchemy import text

    from cdcmirror.exceptions import SourceError

    deadline = time.monotonic() + wait_seconds
    while True:
        with engine.connect() as conn:
            row = conn.execute(
                text("SELECT active FROM pg_replication_slots WHERE slot_name = :s"), {"s": name}
            ).fetchone()
            if row is None:
                return False
            if not row[0]:
                conn.execute(text("SELECT pg_drop_replication_slot(:s)"), {"s": name})
                conn.commit()
                return True
        if time.monotonic() > deadline:
            raise SourceError(
                f"replication slot {name} is still in use after {wait_seconds:.0f}s; stop the "
                "process reading it (a Debezium connector) and run `cdcmirror teardown` again"
            )
        time.sleep(1.0)
