"""A batch that failed because an executor went away (a worker killed, a node lost) is run
again in the job instead of ending it. Pure.

Spark recomputes cached data of a lost executor from its lineage, but not the blocks of a
``localCheckpoint`` (a table's decoded events and classified changes: ``spark/kept.py``,
``table_apply.py``) nor, past its retries, shuffle output that only the lost executor held.
The whole batch is then run again: every commit of the mirror is guarded by position (a row
already written is a ``stale`` event the second time), and tombstones and dead letters are
MERGEd on their keys, so a second run applies nothing twice, exactly as after a crash and a
restart.
"""

from __future__ import annotations

import logging

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
