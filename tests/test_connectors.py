from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cdcmirror.connectors import (
    TEMPLATES,
    masked,
    password_reference,
    render_connector,
    render_template,
    write_secret_file,
)
from cdcmirror.exceptions import ConfigError

PARAMS = {
    "host": "127.0.0.1",
    "port": "5432",
    "user": "cdc",
    "database": "shop",
    "password_ref": "${file:/s/shop.properties:password}",
    "topic_prefix": "shop",
    "table_include_list": "public.orders,public.items",
    "slot_name": "shop",
    "server_id": "5401",
    "kafka_bootstrap_servers": "127.0.0.1:9092",
}


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_template_renders_without_a_clear_password(template: str) -> None:
    config = render_connector(template, PARAMS)
    assert config["database.password"] == "${file:/s/shop.properties:password}"
    assert config["topic.prefix"] == "shop"
    assert config["table.include.list"] == "public.orders,public.items"
    assert config["decimal.handling.mode"] == "precise"
    assert not any("{{" in v for v in config.values())


def test_missing_placeholder_is_named() -> None:
    with pytest.raises(ConfigError, match="needs values for host"):
        render_template('{"a": "{{host}}"}', {})


def test_values_are_json_escaped() -> None:
    assert render_template('{"a": "{{x}}"}', {"x": 'q"uote\\'}) == {"a": 'q"uote\\'}


def test_password_reference_modes(tmp_path: Path) -> None:
    assert password_reference("file", tmp_path / "p") == f"${{file:{tmp_path / 'p'}:password}}"
    assert password_reference("env") == "${env:CDCMIRROR_SOURCE__PASSWORD}"
    with pytest.raises(ConfigError):
        password_reference("vault")


def test_secret_file_is_owner_only(tmp_path: Path) -> None:
    path = write_secret_file(tmp_path / "s" / "x.properties", "p=w\\d")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "password=p=w\\\\d\n"


def test_masked_hides_clear_passwords_only() -> None:
    shown = masked(
        {"database.password": "hunter2", "x.secret": "y", "a": "b", "other.password": "${env:P}"}
    )
    assert shown == {
        "database.password": "***",
        "x.secret": "***",
        "a": "b",
        "other.password": "${env:P}",
    }
