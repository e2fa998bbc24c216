"""Stopping the continuous query between two batches. Spark offers no such stop: polling
``isTriggerActive`` misses the gap when batches run back to back (a job that is behind),
and ``query.stop()`` during a batch interrupts it. The applier runs each batch through the
gate; ``close`` waits for the running batch and keeps the next one from starting (it fails
before touching anything, and its offsets run again at the next start)."""

from __future__ import annotations

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
