"""The one row of a query that always returns one: an aggregate, a procedure call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row


def one_row(df: DataFrame) -> Row:
    """``df``'s first row; a query without one is a bug, not a case to handle."""
    row = df.head()
    assert row is not None, "an aggregate or a procedure call returns a row"
    return row


def first_value(df: DataFrame) -> Any:
    """The first column of ``df``'s first row (a one-row aggregate's value)."""
    return one_row(df)[0]
