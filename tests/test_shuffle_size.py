"""A batch's shuffle partitions follow its events: one per core at least, the session's own
setting at most."""

from __future__ import annotations

from typing import Any

from cdcmirror.spark.shuffle_size import KEY, ShuffleSize


class _Conf:
    """A Spark session's ``conf`` as far as ShuffleSize uses it."""

    def __init__(self, partitions: int) -> None:
        self.values = {KEY: str(partitions)}

    def get(self, key: str) -> str:
        return self.values[key]

    def set(self, key: str, value: str) -> None:
        self.values[key] = value


class _Context:
    def __init__(self, cores: int) -> None:
        self.defaultParallelism = cores


class _Session:
    def __init__(self, partitions: int, cores: int = 2) -> None:
        self.conf = _Conf(partitions)
        self.sparkContext = _Context(cores)


def _parts(events: int) -> dict[str, Any]:
    return {"events": events, "offsets": {}, "starts": {}}


def test_a_small_batch_shuffles_into_one_partition_per_core() -> None:
    batch = _Session(4)
    assert ShuffleSize(_Session(4, cores=2)).size(batch, [_parts(100)], []) == 2
    assert batch.conf.values[KEY] == "2"
    assert ShuffleSize(_Session(4, cores=1)).size(batch, [_parts(100)], []) == 1
    assert ShuffleSize(_Session(4, cores=64)).size(batch, [_parts(100)], []) == 4


def test_tables_and_streams_count_together_up_to_the_session_setting() -> None:
    shuffle = ShuffleSize(_Session(16))
    batch = _Session(16)
    streams = [{"clicks": _parts(3_000), "views": _parts(2_000)}]
    assert shuffle.size(batch, [_parts(1_500), _parts(1_500)], streams) == 4
    assert shuffle.size(batch, [_parts(10_000_000)], []) == 16
    assert batch.conf.values[KEY] == "16"


def test_the_most_is_the_session_setting_when_the_applier_starts() -> None:
    """A batch's own setting (1 after a small batch) is not the most of the next batch."""
    session = _Session(8, cores=1)
    shuffle = ShuffleSize(session)
    shuffle.size(session, [_parts(10)], [])
    assert session.conf.values[KEY] == "1"
    assert shuffle.size(session, [_parts(1_000_000)], []) == 8
