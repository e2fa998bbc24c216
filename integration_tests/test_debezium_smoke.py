"""Real Debezium connectors on both dialects: changes arrive in Kafka in order, exactly."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from cdcmirror.stack.control import Stack
from cdcmirror.stack.layout import CONNECT
from support import services
from support.debezium_events import WORKLOAD_EXPECTED, ChangeTopic, decimal_field, payload


def _check(changes: ChangeTopic) -> None:
    records = changes.records
    assert len(records) == len(WORKLOAD_EXPECTED), records
    got = []
    for key, value in records:
        body = payload(value)
        key_id = json.loads(key)["payload"]["id"] if key else None
        op = body["op"] if body else None
        name = (body.get("after") or {}).get("name") if body else None
        got.append((op, key_id, name))
    assert got == WORKLOAD_EXPECTED

    # values travel exactly: the decimal of the insert and of the update
    insert_value = records[1][1]
    update_value = records[2][1]
    assert insert_value is not None and update_value is not None
    inserted = payload(insert_value)["after"]  # type: ignore[index]
    updated = payload(update_value)["after"]  # type: ignore[index]
    assert decimal_field(insert_value, "amount", inserted["amount"]) == Decimal("12.34")
    assert decimal_field(update_value, "amount", updated["amount"]) == Decimal("99999999.99")
    # the delete names the deleted key in `before` and has no `after`
    deleted = payload(records[3][1])
    assert deleted is not None and deleted["after"] is None and deleted["before"]["id"] == 2
    # the source block carries the position the applier will order by
    source = payload(update_value)["source"]  # type: ignore[index]
    assert source["snapshot"] in ("false", False)


def test_postgresql_changes_arrive_in_order(postgres_changes: ChangeTopic) -> None:
    _check(postgres_changes)
    source = payload(postgres_changes.records[2][1])["source"]  # type: ignore[index]
    sequence = json.loads(source["sequence"])
    assert len(sequence) == 2 and int(sequence[1]) == source["lsn"]


def test_mariadb_changes_arrive_in_order(mariadb_changes: ChangeTopic) -> None:
    _check(mariadb_changes)
    source = payload(mariadb_changes.records[2][1])["source"]  # type: ignore[index]
    assert source["file"].startswith("mysql-bin.") and source["pos"] > 0


@pytest.mark.parametrize("fixture", ["postgres_changes", "mariadb_changes"])
def test_password_never_in_connector_config_or_log(
    fixture: str, request: pytest.FixtureRequest, stack: Stack
) -> None:
    """The running connector's config holds a provider reference; the password is nowhere."""
    changes: ChangeTopic = request.getfixturevalue(fixture)
    assert changes.records  # this connector really authenticated with the referenced secret
    stored = services.connect_client().config(changes.connector)
    assert stored["database.password"].startswith("${file:")
    assert services.CDC_PASSWORD not in json.dumps(stored)
    assert services.CDC_PASSWORD not in stack.log_file(CONNECT).read_text("utf-8", "replace")
