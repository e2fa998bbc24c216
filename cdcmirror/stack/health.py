"""Health checks of the stack's services over the network."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

from confluent_kafka.admin import AdminClient


def broker_answers_metadata(bootstrap_servers: str, timeout: float = 3.0) -> bool:
    """True when a broker answers a metadata request."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "logger": _QUIET}
    admin = AdminClient(conf)
    try:
        meta = admin.list_topics(timeout=timeout)
    except Exception:  # confluent_kafka raises KafkaException on timeout
        return False
    return bool(meta.brokers)


def connect_plugins(url: str, timeout: float = 3.0) -> list[str] | None:
    """The connector classes a Connect worker lists, or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/connector-plugins", timeout=timeout) as r:
            body = json.loads(r.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return [str(p.get("class")) for p in body]


# librdkafka logs every failed connection attempt; a health probe expects failures.
_QUIET = logging.getLogger("cdcmirror.kafka-probe")
_QUIET.setLevel(logging.CRITICAL)
_QUIET.propagate = False
