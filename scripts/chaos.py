"""`make chaos`: faults at random times while both sources take a random workload and the
continuous mirrors run (``support/chaos.py``); prints one table of faults and of
rows lost, duplicated, resurrected or wrong after each, and exits 1 unless all are 0, both
`reconcile --deep` runs report in sync and no log holds a password.

    CHAOS_FAULTS=N (default 44)  CHAOS_SEED=S (default 1)  CHAOS_ROWS=R (default 500)
    CHAOS_ONLY="broker kill -9,schema change" (default: every kind)
    .venv/bin/python scripts/chaos.py

Needs the provisioned sources and the stack (`make provision stack-up`); run it as the user
that may restart PostgreSQL and MariaDB (root here), nothing else running on the machine.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from support import services
from support.chaos import Chaos
from support.chaos_world import maria_side, pg_side


def main() -> int:
    faults = int(os.environ.get("CHAOS_FAULTS", "44"))
    seed = int(os.environ.get("CHAOS_SEED", "1"))
    rows = int(os.environ.get("CHAOS_ROWS", "500"))
    only = [k.strip() for k in os.environ.get("CHAOS_ONLY", "").split(",") if k.strip()]
    work = Path(tempfile.mkdtemp(prefix="cdcmirror-chaos-"))
    print(f"chaos: {faults} faults, seed {seed}, logs in {work}", flush=True)
    started = time.monotonic()
    sides = [
        pg_side(work, seed, {"rows": rows, "format": "json"}),
        maria_side(work, seed + 1, {"rows": rows, "format": "avro", "maintain_every": 5}),
    ]
    try:
        report = Chaos(sides, seed).run(
            faults, log=lambda m: print(m, flush=True), only=only or None
        )
    finally:
        for side in sides:
            if side.job is not None:
                side.job.kill()
            side.teardown()
    minutes = (time.monotonic() - started) / 60
    print(f"\nchaos run: {faults} faults, seed {seed}, {minutes:.0f} min")
    print(report.table())
    print(f"reconcile --deep exit codes: {report.reconcile}")
    print(f"writer errors while sources restarted: {report.writer_errors}")
    print(f"log files holding a password: {len(report.secret_hits)} {report.secret_hits[:3]}")
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    return 0 if report.clean else 1


if __name__ == "__main__":
    with services.forgetting_made():
        code = main()
    sys.exit(code)
