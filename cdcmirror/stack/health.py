"""Health checks of the stack's services over the network."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient

from cdcmirror.exceptions import ServiceUnavailableError

Brokers = str | Mapping[str, Any]
"""Where Kafka is: its bootstrap servers, or a whole librdkafka client config (bootstrap
servers and the security settings of ``kafka_security.librdkafka_conf``)."""


def _conf(brokers: Brokers) -> dict[str, Any]:
    base = {"bootstrap.servers": brokers} if isinstance(brokers, str) else dict(brokers)
    return {**base, "logger": _QUIET}


def broker_answers_metadata(brokers: Brokers, timeout: float = 3.0) -> bool:
    """True when a broker answers a metadata request."""
    return kafka_problem(brokers, timeout) is None


def kafka_problem(brokers: Brokers, timeout: float = 3.0) -> str | None:
    """None when a broker answers a metadata request; else why not: ``"authentication:
    <broker's reason>"`` when it refused the client's login or TLS handshake (a wrong
    password, an untrusted certificate), ``"unreachable"`` otherwise."""
    refused: list[str] = []

    def on_error(err: KafkaError) -> None:
        if err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL):
            refused.append(str(err.str()))

    conf: dict[str, Any] = {**_conf(brokers), "error_cb": on_error}
    admin = AdminClient(conf)
    try:
        meta = admin.list_topics(timeout=timeout)
    except Exception:  # confluent_kafka raises KafkaException on timeout
        meta = None
    admin.poll(0)  # serve the error callbacks
    if refused:
        return f"authentication: {refused[-1]}"
    return None if meta is not None and meta.brokers else "unreachable"


def ensure_scram_user(
    brokers: Brokers, user: str, password: str, mechanism: str, iterations: int
) -> None:
    """Create the SCRAM credential of ``user`` (or set its password): idempotent."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    kind = getattr(ScramMechanism, mechanism.replace("-", "_"))
    info = ScramCredentialInfo(kind, iterations)
    admin = AdminClient(_conf(brokers))
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(user, info, password.encode())]
    )
    for future in futures.values():
        future.result(timeout=30)


def committed_end_offsets(
    brokers: Brokers, topics: list[str], timeout: float = 10.0, earliest: bool = False
) -> dict[str, dict[int, int]]:
    """Per topic and partition, the offset after the last committed event (the last stable
    offset a read_committed reader can reach), or with ``earliest`` the first offset Kafka
    still holds; a topic that does not exist is left out."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    spec = OffsetSpec.earliest if earliest else OffsetSpec.latest
    admin = AdminClient(_conf(brokers))
    meta = admin.list_topics(timeout=timeout)
    wanted = {
        TopicPartition(t, p): spec()  # type: ignore[no-untyped-call]
        for t in topics
        if t in meta.topics and meta.topics[t].error is None
        for p in meta.topics[t].partitions
    }
    out: dict[str, dict[int, int]] = {}
    if not wanted:
        return out
    futures = admin.list_offsets(
        wanted, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout
    )
    for tp, future in futures.items():
        out.setdefault(tp.topic, {})[tp.partition] = int(future.result().offset)
    return out


def connect_plugins(
    url: str, timeout: float = 3.0, auth: tuple[str, str] | None = None
) -> list[str] | None:
    """The connector classes a Connect worker lists, or None when it does not answer; a
    refused login (``auth``: basic auth's user and password) is a ConfigError."""
    from cdcmirror.clients.connect import refused
    from cdcmirror.clients.http_auth import basic_auth
    from cdcmirror.exceptions import ConfigError

    request = urllib.request.Request(f"{url.rstrip('/')}/connector-plugins")
    if auth is not None:
        request.add_header("Authorization", basic_auth(*auth))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            body = json.loads(r.read().decode())
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise ConfigError(refused(url, exc.code)) from exc
        return None
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return [str(p.get("class")) for p in body]


# librdkafka logs every failed connection attempt; a health probe expects failures.
_QUIET = logging.getLogger("cdcmirror.kafka-probe")
_QUIET.setLevel(logging.CRITICAL)
_QUIET.propagate = False


def registry_answers(url: str, timeout: float = 3.0, auth: tuple[str, str] | None = None) -> bool:
    """True when a schema registry's Confluent-compatible API lists its subjects (``auth``:
    its basic-auth login)."""
    from cdcmirror.clients.http_auth import basic_auth

    request = urllib.request.Request(f"{url.rstrip('/')}/subjects")
    if auth is not None:
        request.add_header("Authorization", basic_auth(*auth))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return isinstance(json.loads(r.read().decode()), list)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            from cdcmirror.clients.registry import refused
            from cdcmirror.exceptions import ConfigError

            raise ConfigError(refused(url, exc.code)) from exc
        return False
    except (urllib.error.URLError, OSError, ValueError):
        return False


def topics_named(
    brokers: Brokers, prefix: str, extra: list[str], timeout: float = 10.0
) -> list[str]:
    """The topics whose name starts with ``prefix``, plus those of ``extra`` that exist."""
    names = set(AdminClient(_conf(brokers)).list_topics(timeout=timeout).topics)
    return sorted(t for t in names if t.startswith(prefix) or t in extra)


def delete_topics(brokers: Brokers, topics: list[str], timeout: float = 30.0) -> None:
    if not topics:
        return
    admin = AdminClient(_conf(brokers))  # kept alive until the futures resolve
    futures = admin.delete_topics(topics, operation_timeout=timeout)
    for future in futures.values():
        future.result(timeout=timeout)


def sample_values(
    brokers: Brokers, topics: list[str], count: int, timeout: float = 15.0
) -> list[bytes]:
    """Up to ``count`` record values of ``topics``, the newest of each partition first
    read from (``read_committed``); fewer when the topics hold fewer, none when they do not
    exist yet."""
    import time
    import uuid

    from confluent_kafka import Consumer, TopicPartition

    ends = committed_end_offsets(brokers, topics, timeout)
    parts = [(t, p, end) for t, by_part in ends.items() for p, end in by_part.items() if end > 0]
    if not parts:
        return []
    each = max(1, count // len(parts))
    consumer = Consumer(
        {
            **_conf(brokers),
            "group.id": f"cdcmirror-sample-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([TopicPartition(t, p, max(0, end - each)) for t, p, end in parts])
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            batch = consumer.consume(num_messages=min(500, count - len(out)), timeout=1.0)
            if not batch:
                break
            out += [v for m in batch if m.error() is None and (v := m.value()) is not None]
        return out[:count]
    finally:
        consumer.close()


def records_from(
    brokers: Brokers, topic: str, start: int, timeout: float = 30.0
) -> tuple[list[tuple[int, bytes | None]], int]:
    """The committed records of the one-partition ``topic`` from offset ``start`` (or the
    first Kafka still holds, when it holds none that old) to its end now, as (offset,
    value), and the offset after the last of them (``start`` when there are none: the topic
    may not exist yet). Read with a consumer of its own, assigned, never a group member.
    Kafka not answering, or not handing the topic over to its end, within ``timeout``
    seconds: ``ServiceUnavailableError`` (the job stops, nothing committed)."""
    import time
    import uuid

    from confluent_kafka import Consumer, KafkaException, TopicPartition

    def unavailable(why: str) -> ServiceUnavailableError:
        where = brokers if isinstance(brokers, str) else brokers.get("bootstrap.servers")
        return ServiceUnavailableError(
            f"Kafka at {where} did not hand over {topic} from offset {start} ({why}); check "
            "that Kafka answers (`cdcmirror check`), then start the job again"
        )

    try:
        end = committed_end_offsets(brokers, [topic], timeout).get(topic, {}).get(0)
    except KafkaException as exc:
        raise unavailable(str(exc)) from exc
    if end is None or end <= start:
        return [], start
    consumer = Consumer(
        {
            **_conf(brokers),
            "group.id": f"cdcmirror-read-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            # the end is told by an event, not by offsets: transaction markers take offsets
            # no consumer is handed
            "enable.partition.eof": True,
            # the broker answers a fetch at the end at once, not after Kafka's 500 ms wait
            "fetch.wait.max.ms": 20,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, start)])
        out: list[tuple[int, bytes | None]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)  # each record as it comes: consume() waits for more
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                return out, (out[-1][0] + 1 if out else start)
            if error is not None and error.fatal():
                raise unavailable(error.str())
            if error is None:  # other errors are the client's news: it retries by itself
                out.append((int(message.offset() or 0), message.value()))
        raise unavailable(f"not read to its end, offset {end}, in {timeout:.0f} s")
    finally:
        consumer.close()
