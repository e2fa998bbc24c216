"""The stop gate between batches (``spark/batches.py``)."""

from __future__ import annotations

import threading
import time

import pytest

from cdcmirror.spark.batches import NOT_STARTED, BatchGate


def test_close_waits_for_the_running_batch_and_no_batch_starts_after() -> None:
    gate = BatchGate()
    inside, finished = threading.Event(), threading.Event()

    def batch() -> None:
        with gate.batch():
            inside.set()
            time.sleep(0.3)
            finished.set()

    worker = threading.Thread(target=batch)
    worker.start()
    assert inside.wait(5)
    gate.close()  # returns only once the running batch is done
    assert finished.is_set()
    worker.join()
    with pytest.raises(RuntimeError, match=NOT_STARTED), gate.batch():
        pytest.fail("a batch ran after close")


def test_close_between_batches_returns_at_once() -> None:
    gate = BatchGate()
    with gate.batch():
        pass
    started = time.monotonic()
    gate.close()
    assert time.monotonic() - started < 0.1


def test_a_failed_batch_is_kept_for_the_report_of_a_jvm_that_went_with_it() -> None:
    """In local mode an OutOfMemoryError ends the JVM, and with it Spark's report of the
    query's failure: the job then reports what the gate kept (``stream.jvm_gone``)."""
    from cdcmirror.exceptions import ConfigError
    from cdcmirror.spark.query import MEMORY_REMEDY, jvm_gone

    gate = BatchGate()
    with gate.batch():
        pass
    assert gate.failure is None
    error = "t: batch 7 failed (topic t): o9.localCheckpoint\njava.lang.OutOfMemoryError: heap"
    with pytest.raises(RuntimeError), gate.batch():
        raise RuntimeError(error)
    assert gate.failure == error
    gone = jvm_gone(gate.failure, ConnectionRefusedError("refused"))
    assert isinstance(gone, ConfigError) and gone.exit_code == 2
    assert str(gone) == (
        "the Spark driver's JVM stopped: t: batch 7 failed (topic t): o9.localCheckpoint; "
        + MEMORY_REMEDY
    )
    other = jvm_gone("t: batch 8 failed: killed", ConnectionRefusedError("refused"))
    assert not isinstance(other, ConfigError) and "batch 8 failed: killed" in str(other)


def test_the_failure_is_read_once_the_failing_batch_has_ended() -> None:
    """The job's own call to the JVM fails as soon as the JVM is gone, before the running
    batch's Python has raised its error: the report waits for the batch to end."""
    gate = BatchGate()
    inside = threading.Event()

    def batch() -> None:
        with pytest.raises(RuntimeError), gate.batch():
            inside.set()
            time.sleep(0.3)
            raise RuntimeError("batch 4 failed: java.lang.OutOfMemoryError")

    worker = threading.Thread(target=batch)
    worker.start()
    assert inside.wait(5)
    assert gate.failure_after(5) == "batch 4 failed: java.lang.OutOfMemoryError"
    worker.join()
    assert BatchGate().failure_after(0.01) is None  # no batch failed
