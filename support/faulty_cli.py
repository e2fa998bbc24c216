"""``python -m support.faulty_cli ARGS``: the cdcmirror command line with the crash
tests' fault hook, which production code does not carry.

``CDCMIRROR_FAULT`` picks the fault, at the commit of a batch's rows (a table MERGE, a
stream append: ``cdcmirror.spark.iceberg.data_commit``):

- ``mid-merge:SECONDS``: the process ends SECONDS after that commit starts, mid-way;
- ``after-commit``: it ends right after the commit, before Spark records the batch in its
  checkpoint.

The process ends by ``os._exit(FAULT_EXIT)``: no handler, no ``finally``, like a crash.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

FAULT_ENV = "CDCMIRROR_FAULT"
FAULT_EXIT = 86
MODULE = "support.faulty_cli"

logger = logging.getLogger("cdcmirror.mirror")


def install(fault: str) -> None:
    """Wrap ``data_commit`` so that ``fault`` ends the process at its point."""
    from cdcmirror.spark import iceberg as commits

    if not (fault == "after-commit" or fault.startswith("mid-merge:")):
        raise SystemExit(f"{FAULT_ENV}={fault!r}: use mid-merge:SECONDS or after-commit")
    original = commits.data_commit

    def faulty(spark: Any, props: Mapping[str, str], fn: Callable[[], object]) -> None:
        if fault.startswith("mid-merge:"):
            timer = threading.Timer(float(fault.split(":", 1)[1]), os._exit, (FAULT_EXIT,))
            timer.daemon = True
            timer.start()
        original(spark, props, fn)
        if fault == "after-commit":
            logger.error("%s=after-commit: exiting after the commit", FAULT_ENV)
            os._exit(FAULT_EXIT)

    commits.data_commit = faulty


def command(env: dict[str, str]) -> list[str]:
    """The module to run as ``python -m``: this hook when ``env`` names a fault."""
    return ["-m", MODULE if env.get(FAULT_ENV) else "cdcmirror.cli"]


if __name__ == "__main__":
    from cdcmirror.cli import main

    if os.environ.get(FAULT_ENV):
        install(os.environ[FAULT_ENV])
    main()
