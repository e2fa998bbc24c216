"""Iceberg commits of the mirror through Spark: every snapshot a statement commits carries
the batch's properties in its summary (query id, batch id, Kafka offsets:
``mirror/resume.py``), and a commit that lost a race with `maintain` is retried.

``CDCMIRROR_FAULT`` (crash tests and the chaos run only) ends the process at a chosen
point of a table MERGE; nothing else here acts on it."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, ClassVar

from cdcmirror.spark.conflicts import retry_on_conflict

logger = logging.getLogger("cdcmirror.mirror")

FAULT_ENV = "CDCMIRROR_FAULT"
FAULT_EXIT = 86


def with_commit_props(
    spark: Any, props: dict[str, str], fn: Callable[[], Any], fault: bool = False
) -> None:
    """Run ``fn`` so that every snapshot it commits carries ``props`` in its summary.

    ``fault``: this is a table MERGE, where ``CDCMIRROR_FAULT`` may end the process
    (``mid-merge:SECONDS`` while it runs, ``after-commit`` right after it commits, before
    Spark records the batch in its checkpoint).
    """
    injected = os.environ.get(FAULT_ENV, "") if fault else ""
    if injected.startswith("mid-merge:"):
        timer = threading.Timer(float(injected.split(":", 1)[1]), os._exit, (FAULT_EXIT,))
        timer.daemon = True
        timer.start()
    jvm = spark.sparkContext._jvm
    java_props = jvm.java.util.HashMap()
    for k, v in props.items():
        java_props.put(k, v)
    retry_on_conflict(  # e.g. `cdcmirror maintain` rewrote files this MERGE deletes from
        lambda: jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(
            java_props, _JavaCallable(fn), jvm.java.lang.RuntimeException().getClass()
        ),
        "mirror commit",
    )
    if injected == "after-commit":
        logger.error("CDCMIRROR_FAULT=after-commit: exiting after the MERGE commit")
        os._exit(FAULT_EXIT)


class _JavaCallable:
    """A Python function as a ``java.util.concurrent.Callable`` (through Py4J)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn

    def call(self) -> None:
        self.fn()
        return None

    class Java:
        implements: ClassVar[list[str]] = ["java.util.concurrent.Callable"]
