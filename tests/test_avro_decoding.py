"""Avro in the Confluent wire format -> the JSON converter's text and field schemas. Pure.

The envelope schema below has the shape Apicurio's converter registered for a Debezium 3.5
PostgreSQL table (seen in the registry): Decimal as bytes with ``connect.parameters``,
VariableScaleDecimal as a record, Debezium time types as annotated ints and longs, ``after``
as a reference to the ``Value`` record that ``before`` defines, an enum-like union in
``source``.
"""

from __future__ import annotations

import re

import pytest

from cdcmirror.bootstrap.connector import converter_settings
from cdcmirror.clients.registry import SchemaRegistry
from cdcmirror.config.settings import Kafka
from cdcmirror.exceptions import ServiceUnavailableError
from cdcmirror.mirror.avro import (
    AvroDecodeError,
    connect_schema,
)
from cdcmirror.mirror.carriers import carrier_of_field, iceberg_of_field
from cdcmirror.mirror.evolution import plan_evolution, row_fields
from support.avro_events import ENVELOPE
from support.tables import NAME, make_table


def test_connect_schema_drives_evolution_like_the_json_converter() -> None:
    fields = row_fields(connect_schema(ENVELOPE))
    assert fields is not None
    by_name = {f["field"]: f for f in fields}
    assert carrier_of_field(by_name["price"]) == ("bytes org.apache.kafka.connect.data.Decimal(10)")
    assert iceberg_of_field(by_name["price"]) == "decimal(38,10)"
    assert carrier_of_field(by_name["small"]) == "int16"
    assert carrier_of_field(by_name["born"]) == "int32 io.debezium.time.Date"
    assert carrier_of_field(by_name["tags"]) == "array<string>"
    assert by_name["id"]["optional"] is False and by_name["name"]["optional"] is True
    table = make_table(NAME)
    evo = plan_evolution(table, fields)
    added = {c.name: c.iceberg for c in evo.add}
    assert added["price"] == "decimal(38,10)" and added["born"] == "date"
    assert not evo.errors or all("wide" in e or "unbounded" in e for e in evo.errors)


def test_a_schema_the_mirror_cannot_map_is_an_error() -> None:
    both = {"type": "record", "name": "R", "fields": [{"name": "x", "type": ["string", "long"]}]}
    with pytest.raises(AvroDecodeError, match="not an optional value"):
        connect_schema(both)
    with pytest.raises(AvroDecodeError, match="undefined type 'Nope'"):
        connect_schema({"type": "record", "name": "R", "fields": [{"name": "x", "type": "Nope"}]})


def test_registry_unreachable_names_the_url() -> None:
    registry = SchemaRegistry("http://127.0.0.1:1/apis/ccompat/v7", timeout=2)
    with pytest.raises(ServiceUnavailableError, match=re.escape("127.0.0.1:1/apis/ccompat/v7")):
        registry.schemas([1])


def _avro(registry: str) -> Kafka:
    return Kafka(bootstrap_servers="k:9092", format="avro", schema_registry_url=registry)


def test_avro_connector_settings_write_the_confluent_wire_format() -> None:
    s = converter_settings(_avro("http://127.0.0.1:8081/apis/ccompat/v7/"))
    for side in ("key", "value"):
        assert s[f"{side}.converter"] == "io.apicurio.registry.utils.converter.AvroConverter"
        assert s[f"{side}.converter.apicurio.registry.as-confluent"] == "true"
        assert s[f"{side}.converter.apicurio.registry.headers.enabled"] == "false"
    confluent = converter_settings(_avro("https://sr.example:8081"))
    assert confluent["value.converter"] == "io.confluent.connect.avro.AvroConverter"
