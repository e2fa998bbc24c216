"""The stop gate between batches (``spark/batch_gate.py``)."""

from __future__ import annotations

import threading
import time

import pytest

from cdcmirror.spark.batch_gate import NOT_STARTED, BatchGate


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
