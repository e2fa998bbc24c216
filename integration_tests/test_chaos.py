"""A reduced chaos run (``support/chaos.py``; the long one is `make chaos`): one
fault of each kind in ``CI_KINDS`` at a random moment while both sources take a random
workload and their continuous mirrors run; after each, both tables equal their sources
again, nothing lost, duplicated, resurrected or wrong; `reconcile --deep` reports in sync;
no log holds a password."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cdcmirror.stack.control import Stack
from support.chaos import CI_KINDS, FAULTS, Chaos
from support.chaos_world import maria_side, pg_side

pytestmark = pytest.mark.serial  # see the marker in pyproject.toml

SEED = 20261124


def _history(config: Path, identifier: str) -> tuple[int, int]:
    """The commits made to a table (its last sequence number) and the snapshots it holds."""
    from cdcmirror.catalog import load_catalog
    from cdcmirror.config import load_config

    metadata = load_catalog(load_config(config, environ={})).load_table(identifier).metadata
    return int(metadata.last_sequence_number), len(metadata.snapshots)


def test_faults_of_every_kind_lose_nothing(
    stack: Stack, postgres: None, mariadb: None, tmp_path: Path
) -> None:
    kinds = [k for k in FAULTS if k in CI_KINDS]
    faults = int(os.environ.get("CHAOS_CI_FAULTS", str(len(kinds))))
    sides = [
        # with chains of key changes over unchanged TOAST values (the PostgreSQL default)
        # its job keeps 1 snapshot a table (expired once past 2), through every fault
        pg_side(tmp_path, SEED, {"rows": 150, "format": "json", "max_snapshots": 1}),
        maria_side(tmp_path, SEED + 1, {"rows": 150, "format": "avro", "maintain_every": 4}),
    ]
    lines: list[str] = []
    try:
        report = Chaos(sides, SEED, recovery_timeout=240).run(faults, log=lines.append, only=kinds)
        history = _history(sides[0].config, sides[0].identifier)
    finally:
        for side in sides:
            if side.job is not None:
                side.job.kill()
            side.teardown()
    summary = "\n".join([*lines, report.table(), *report.problems, *report.secret_hits])
    assert sum(s.injected for s in report.kinds.values()) == faults, summary
    if faults >= len(kinds):
        assert set(report.kinds) == set(kinds), summary
    assert report.reconcile == {"postgresql": 0, "mariadb": 0}, summary
    assert report.clean, summary
    # past the cap and its slack (2), the job expired the oldest (how many commits the run
    # makes depends on its timing: 3 to 5 in the runs seen)
    commits, held = history
    assert held <= min(commits, 2), f"{commits} commits, {held} snapshots held\n{summary}"
