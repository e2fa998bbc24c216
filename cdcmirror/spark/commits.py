"""Iceberg commits of the mirror through Spark: every snapshot a statement commits carries
the batch's properties in its summary (query id, batch id, Kafka offsets:
``mirror/resume.py``), and a commit that lost a race with `maintain` is retried.

:func:`data_commit` is the commit of a batch's rows (a table MERGE, a stream append), the
one whose timing matters to exactly-once; the crash tests wrap it
(``integration_tests/faulty_cli.py``), production code carries no fault injection."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ClassVar

from cdcmirror.spark.conflicts import retry_on_conflict
from cdcmirror.spark.java_classes import java_class

logger = logging.getLogger("cdcmirror.mirror")


def with_commit_props(spark: Any, props: dict[str, str], fn: Callable[[], Any]) -> None:
    """Run ``fn`` so that every snapshot it commits carries ``props`` in its summary."""
    java_props = java_class(spark, "java.util.HashMap")()
    for k, v in props.items():
        java_props.put(k, v)
    metadata = java_class(spark, "org.apache.iceberg.spark.CommitMetadata")
    thrown = java_class(spark, "java.lang.Class").forName("java.lang.RuntimeException")
    retry_on_conflict(  # e.g. `cdcmirror maintain` rewrote files this MERGE deletes from
        lambda: metadata.withCommitProperties(java_props, _JavaCallable(fn), thrown),
        "mirror commit",
    )


def data_commit(spark: Any, props: dict[str, str], fn: Callable[[], Any]) -> None:
    """The commit of a batch's rows into a table: :func:`with_commit_props`. Callers reach it
    through this module (``commits.data_commit``), so that a test can wrap it."""
    with_commit_props(spark, props, fn)


class _JavaCallable:
    """A Python function as a ``java.util.concurrent.Callable`` (through Py4J)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn

    def call(self) -> None:
        self.fn()
        return None

    class Java:
        implements: ClassVar[list[str]] = ["java.util.concurrent.Callable"]
