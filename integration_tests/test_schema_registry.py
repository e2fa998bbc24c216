"""The mirror's schema-registry client against the stack's real registry (Apicurio,
Confluent-compatible API)."""

from __future__ import annotations

import json
import time

import pytest

from cdcmirror.clients.registry import SchemaRegistry
from cdcmirror.config.settings import Kafka
from cdcmirror.stack.control import Stack
from support import services
from support.services import register_schema

URL = Kafka().schema_registry_url


@pytest.mark.serial  # it needs the registry's next id to itself: no other test registers then
def test_an_id_unknown_at_first_is_fetched_once_it_exists(stack: Stack) -> None:
    """An id the registry does not know yet (a 404: registry replication lag, a schema
    registered a moment later) is asked again on the next batch, not remembered as missing
    for the life of the job."""
    registry = SchemaRegistry(URL)
    name = services.unique("reg")
    # unique content: the registry gives identical content the id it already has
    probe = register_schema(f"{name}-probe", {"type": "record", "name": f"P_{name}", "fields": []})
    upcoming = probe + 1
    assert registry.schemas([upcoming]) == {}
    schema = {"type": "record", "name": f"R_{name}", "fields": [{"name": "a", "type": "long"}]}
    created = register_schema(f"{name}-value", schema)
    assert created == upcoming, "another schema was registered in between; run again"
    found = registry.schemas([upcoming])
    assert json.loads(found[upcoming])["name"] == f"R_{name}"


def test_many_unknown_ids_cost_one_backoff_not_one_each(stack: Stack) -> None:
    """A flood of events naming ids the registry lacks (fuzzed or corrupt values) must not
    stall a batch for the backoff of every id: it found 700 such ids costing 40 minutes."""
    registry = SchemaRegistry(URL)
    unknown = [2**31 - 1 - i for i in range(300)]
    started = time.monotonic()
    assert registry.schemas(unknown) == {}
    spent = time.monotonic() - started
    assert spent < sum(registry.retries) + 30, spent
