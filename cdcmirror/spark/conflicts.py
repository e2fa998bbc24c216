"""Retry an Iceberg commit that lost a race with another writer (the mirror's MERGE and
`cdcmirror maintain` commit to the same tables)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
logger = logging.getLogger(__name__)

# What Iceberg says when a commit's validation finds a concurrent change it cannot merge
# with (e.g. a rewrite replaced a data file a MERGE wrote position deletes for).
_CONFLICT_MARKS = (
    "ValidationException",
    "CommitFailedException",
    "Found conflicting files",
    "found new delete",
    "Cannot commit",
    "Missing required files to delete",
)


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is a commit conflict (worth a retry), judged from its message.

    >>> is_conflict(RuntimeError("org.apache.iceberg.exceptions.ValidationException: x"))
    True
    >>> is_conflict(RuntimeError("Table not found"))
    False
    """
    text = str(exc)
    return any(mark in text for mark in _CONFLICT_MARKS)


def retry_on_conflict(
    fn: Callable[[], T], what: str, attempts: int = 8, first_wait: float = 1.0
) -> T:
    """Run ``fn``; after a commit conflict wait (1 s, 2 s, 4 s ... up to 30 s) and run it
    again. ``fn`` must be safe to repeat: a conflicting commit changed nothing."""
    wait = first_wait
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:
            if attempt == attempts or not is_conflict(exc):
                raise
            logger.warning(
                "%s: commit conflict with a concurrent writer (attempt %d of %d), retrying "
                "in %.0f s: %s",
                what,
                attempt,
                attempts,
                wait,
                str(exc).splitlines()[0][:300],
            )
            time.sleep(wait)
            wait = min(wait * 2, 30.0)
    raise AssertionError("unreachable")
