"""How the mirror's micro-batches run: one at a time through a gate, and again in the job
when an executor and its data were lost.

Stopping the continuous query between two batches: Spark offers no such stop. Polling
``isTriggerActive`` misses the gap when batches run back to back (a job that is behind), and
``query.stop()`` during a batch interrupts it. The batch runs through the gate; ``close``
waits for the running batch and keeps the next one from starting (it fails before touching
anything, and its offsets run again at the next start).

A batch that failed because an executor went away (a worker killed, a node lost) is run
again in the job instead of ending it. Spark recomputes cached data of a lost executor from
its lineage, but not the blocks of a ``localCheckpoint`` (a table's decoded events and
classified changes) nor, past its retries, shuffle output that only the lost executor held.
The whole batch is then run again: every commit of the mirror is guarded by position (a row
already written is a ``stale`` event the second time), and tombstones and dead letters are
MERGEd on their keys, so a second run applies nothing twice, exactly as after a crash and a
restart (an event stream's table is read again first: what it holds).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

NOT_STARTED = "cdcmirror is stopping: this batch was not started"


class BatchGate:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False
        # why the last batch failed: what the job reports when the JVM went down with it
        # (an OutOfMemoryError in local mode ends the JVM, and Spark's own report with it)
        self.failure: str | None = None

    @contextmanager
    def batch(self) -> Iterator[None]:
        with self._lock:
            if self._closed:
                raise RuntimeError(NOT_STARTED)
            try:
                yield
            except Exception as exc:
                self.failure = str(exc)
                raise

    def failure_after(self, wait: float) -> str | None:
        """Why the last batch failed, once the running batch (if any) has ended, waiting up
        to ``wait`` seconds for it: a JVM that went down under a batch fails the job's own
        calls at once, while the batch's Python is still raising its error."""
        if self._lock.acquire(timeout=wait):
            self._lock.release()
        return self.failure

    def close(self) -> None:
        """Waits until no batch runs; no batch starts after it."""
        with self._lock:
            self._closed = True


ATTEMPTS = 3
"""Runs of one batch at most (the first and two more)."""

MARKS = (
    "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND",  # a localCheckpoint block lived on the executor
    "FetchFailedException",  # its shuffle output is gone
    "ExecutorLostFailure",
)


def lost_executor(error: BaseException) -> bool:
    """True when ``error`` (or an error it was raised from) says an executor's data is gone.

    >>> lost_executor(RuntimeError("[CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND] Checkpoint block"))
    True
    >>> try:
    ...     try:
    ...         raise RuntimeError("org.apache.spark.shuffle.FetchFailedException: x")
    ...     except RuntimeError as inner:
    ...         raise ValueError("batch 3 failed") from inner
    ... except ValueError as outer:
    ...     lost_executor(outer)
    True
    >>> lost_executor(ValueError("DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION"))
    False
    """
    seen: BaseException | None = error
    while seen is not None:
        if any(mark in str(seen) for mark in MARKS):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def retried(error: BaseException, batch_id: int, attempt: int, logger: logging.Logger) -> bool:
    """Whether run ``attempt`` of batch ``batch_id``, which failed with ``error``, is followed
    by another (said in ``logger``)."""
    if attempt >= ATTEMPTS or not lost_executor(error):
        return False
    logger.warning(
        "batch %d: an executor and its data were lost (%s); running the batch again (run %d "
        "of %d), which applies nothing twice",
        batch_id,
        str(error).splitlines()[0][:300],
        attempt + 1,
        ATTEMPTS,
    )
    return True
