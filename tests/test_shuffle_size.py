"""A batch's shuffle partitions follow its events: one per core at least, the session's own
setting at most (``spark/cdc/batch.partitions_for``)."""

from __future__ import annotations

import pytest

from cdcmirror.spark.cdc.batch import partitions_for


@pytest.mark.parametrize(
    ("events", "cores", "most", "partitions"),
    [
        pytest.param(100, 2, 4, 2, id="a-small-batch-one-per-core"),
        pytest.param(100, 1, 4, 1, id="one-core"),
        pytest.param(100, 64, 4, 4, id="more-cores-than-the-session-setting"),
        pytest.param(3_000 + 2_000 + 1_500 + 1_500, 2, 16, 4, id="tables-and-streams-together"),
        pytest.param(10_000_000, 2, 16, 16, id="at-most-the-session-setting"),
        pytest.param(0, 2, 8, 2, id="no-events"),
    ],
)
def test_partitions_follow_the_events(events: int, cores: int, most: int, partitions: int) -> None:
    assert partitions_for(events, cores, most) == partitions
