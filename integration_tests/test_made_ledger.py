"""What a killed test or benchmark process made is removed by the next run
(``made_ledger.py``, ``services.sweep_dead``), and what a live one made is not: on the real
stack's Kafka and PostgreSQL, with processes of their own killed by SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from cdcmirror.stack.control import Stack
from cdcmirror.stack.health import topics_named
from support import made_ledger, services

# a process that makes a name, a schema and a topic of that name, prints the name, then waits
MAKER = """
from support import services
name = services.unique("ledger_it")
with services.pg_connect() as conn:
    conn.execute(f"CREATE SCHEMA {name}")
services.create_topic(f"{name}.t", 1)
print(name, flush=True)
import time
time.sleep(600)
"""


def _maker() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", MAKER], stdout=subprocess.PIPE, text=True, cwd=services.ROOT
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _left(name: str) -> tuple[bool, bool]:
    """Whether the schema and the topic ``name`` made are there."""
    with services.pg_connect() as conn:
        schema = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
    return schema is not None, f"{name}.t" in topics_named(services.KAFKA, name, [])


def test_what_a_killed_process_made_is_swept_and_a_live_ones_is_not(
    stack: Stack, postgres: None
) -> None:
    killed, gone = _maker()
    live, kept = _maker()
    try:
        assert gone.startswith("ledger_it_") and kept.startswith("ledger_it_"), (gone, kept)
        assert _left(gone) == (True, True) and _left(kept) == (True, True)
        killed.send_signal(signal.SIGKILL)
        killed.wait(30)
        assert any(gone in names for names in made_ledger.dead_ledgers().values())
        services.sweep_dead()
        assert _left(gone) == (False, False)
        assert _left(kept) == (True, True)  # its process still runs
        assert not any(gone in names for names in made_ledger.dead_ledgers().values())
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait(30)
    time.sleep(0.5)
    services.sweep_dead()
    assert _left(kept) == (False, False)
