"""The proof's read of the transaction topic (``stack/health.records_from``) on the real
Kafka: committed records only, from a given offset to the end, where the end is a
transaction marker that no consumer is handed; a topic not there yet reads as empty; a
Kafka that does not answer stops the read, naming itself."""

from __future__ import annotations

import socket

import pytest
from confluent_kafka import Producer

from cdcmirror.exceptions import ServiceUnavailableError
from cdcmirror.stack.health import records_from
from support import services


def _write(topic: str, transactions: list[tuple[list[bytes], bool]]) -> None:
    """Each transaction's values written to ``topic``, then committed or (False) aborted."""
    producer = Producer(
        {"bootstrap.servers": services.KAFKA, "transactional.id": services.unique("tx")}
    )
    producer.init_transactions(30)
    for values, commit in transactions:
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def test_committed_records_from_an_offset_to_the_end() -> None:
    topic = f"{services.unique('txread')}.transaction"
    services.create_topic(topic, 1)
    _write(topic, [([b"a", b"b", b"c"], True), ([b"x", b"y"], False), ([b"d", b"e"], True)])
    records, after = records_from(services.KAFKA, topic, 0)
    assert [v for _, v in records] == [b"a", b"b", b"c", b"d", b"e"]
    offsets = [o for o, _ in records]
    assert offsets == sorted(offsets) and offsets[:3] == [0, 1, 2]
    assert after == offsets[-1] + 1  # the commit markers after it are never handed over
    # from the middle: the rest; from after the last: nothing, the same offset
    rest, again = records_from(services.KAFKA, topic, offsets[3])
    assert [v for _, v in rest] == [b"d", b"e"] and again == after
    assert records_from(services.KAFKA, topic, after) == ([], after)


def test_a_topic_not_written_yet_reads_as_empty() -> None:
    topic = f"{services.unique('txread')}.transaction"
    assert records_from(services.KAFKA, topic, 7) == ([], 7)


def test_a_kafka_that_does_not_answer_stops_with_its_address() -> None:
    """Nothing listens on the port: a clear stop naming Kafka and the topic, not a hang."""
    with socket.socket() as s:  # a free port, closed again: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServiceUnavailableError) as stop:
        records_from(f"127.0.0.1:{port}", "shop.transaction", 0, timeout=2.0)
    assert f"Kafka at 127.0.0.1:{port}" in str(stop.value)
    assert "shop.transaction" in str(stop.value)
