"""A micro-batch's offset ranges from the checkpoint's offset log (mirror/checkpoint.py), as
the single-pass path of a batch of event streams reads them (spark/cdc/plan.py)."""

from __future__ import annotations

from cdcmirror.mirror.checkpoint import advanced, batch_ranges
from cdcmirror.mirror.resume import EARLIEST
from cdcmirror.spark.cdc.plan import of_ranges


class Logs:
    """An offset log in memory: batch -> the Kafka source's offsets line."""

    def __init__(self, offsets: dict[int, str]) -> None:
        self.offsets = offsets

    def names(self, directory: str) -> list[str]:
        return [str(b) for b in self.offsets] if directory == "offsets" else []

    def read(self, relative: str) -> str:
        batch = int(relative.split("/")[1])
        return 'v1\n{"batchWatermarkMs":0}\n' + self.offsets[batch]


def test_a_batch_starts_where_the_one_before_ended() -> None:
    logs = Logs({4: '{"t":{"0":10,"1":3}}', 5: '{"t":{"0":25,"1":3,"2":7}}'})
    ranges = batch_ranges(logs, 5, "earliest")
    assert ranges == {"t": {0: (10, 25), 1: (3, 3), 2: (EARLIEST, 7)}}
    assert advanced(ranges) == {"t": {0: (10, 25), 2: (EARLIEST, 7)}}


def test_batch_zero_starts_at_the_query_s_starting_offsets() -> None:
    logs = Logs({0: '{"t":{"0":40,"1":9}}'})
    assert batch_ranges(logs, 0, '{"t": {"0": 30, "1": -2}}') == {
        "t": {0: (30, 40), 1: (EARLIEST, 9)}
    }
    assert batch_ranges(logs, 0, "earliest") == {"t": {0: (EARLIEST, 40), 1: (EARLIEST, 9)}}


def test_a_batch_the_log_does_not_hold_is_not_known() -> None:
    assert batch_ranges(Logs({3: '{"t":{"0":1}}'}), 4, "earliest") is None


def test_the_summary_of_planned_ranges_names_the_offset_before_each_end() -> None:
    summary = of_ranges({"t": {0: (10, 25), 2: (EARLIEST, 7)}})["t"]
    assert summary.offsets == {0: 24, 2: 6}
    assert summary.starts == {0: 10, 2: EARLIEST}
    assert summary.events == 15 + 7
