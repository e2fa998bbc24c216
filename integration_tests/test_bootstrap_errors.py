"""Bad input to `cdcmirror bootstrap`: a clear message, exit 2, and nothing created."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdcmirror.stack.control import Stack
from support import services
from support.bootstrap_env import run_cli, write_config

PG_URL = f"postgresql://cdc@127.0.0.1:5432/{services.TEST_DATABASE}"


@pytest.fixture
def pg_schema(postgres: None) -> Iterator[str]:
    """A readable, published schema with one good table."""
    schema = services.unique("bs_bad")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.good (id int PRIMARY KEY, v text)")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO cdc")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO cdc")
        conn.execute(
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {services.ADMIN_USER} IN SCHEMA {schema} "
            "GRANT SELECT ON TABLES TO cdc"
        )
        conn.execute(f"ALTER PUBLICATION cdcmirror ADD TABLES IN SCHEMA {schema}")
    try:
        yield schema
    finally:
        with services.pg_connect() as conn:
            conn.execute(f"ALTER PUBLICATION cdcmirror DROP TABLES IN SCHEMA {schema}")
            conn.execute(
                f"ALTER DEFAULT PRIVILEGES FOR ROLE {services.ADMIN_USER} IN SCHEMA {schema} "
                "REVOKE SELECT ON TABLES FROM cdc"
            )
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _bootstrap(tmp_path: Path, source: dict[str, Any], password: str = services.CDC_PASSWORD):  # type: ignore[no-untyped-def]
    name = services.unique("bad")
    config = write_config(tmp_path, source={"name": name, **source})
    result = run_cli(config, "bootstrap", password=password)
    return name, result


def _assert_nothing_created(tmp_path: Path, name: str) -> None:
    assert not (tmp_path / ".cdcmirror" / "catalog.db").exists(), "an Iceberg catalog was made"
    assert f"cdcmirror-{name}" not in services.connect_client().names()


def test_unknown_dialect(tmp_path: Path, stack: Stack) -> None:
    name, result = _bootstrap(tmp_path, {"dialect": "oracle", "url": PG_URL})
    assert result.exit_code == 2
    assert "source.dialect = 'oracle' is not one of postgresql, mysql" in result.output
    _assert_nothing_created(tmp_path, name)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("not a url", "is not a database URL"),
        ("mysql://cdc@127.0.0.1:3306/shop", "is a mysql URL but source.dialect is 'postgresql'"),
        ("postgresql://cdc@127.0.0.1:1/shop", "cannot be reached"),
    ],
)
def test_bad_url(tmp_path: Path, stack: Stack, url: str, message: str) -> None:
    name, result = _bootstrap(tmp_path, {"dialect": "postgresql", "url": url})
    assert result.exit_code == 2, result.output
    assert message in result.output
    _assert_nothing_created(tmp_path, name)


@pytest.mark.parametrize(
    ("dialect", "url"),
    [
        ("postgresql", PG_URL),
        ("mysql", f"mysql://cdc@127.0.0.1:3306/{services.TEST_DATABASE}"),
    ],
)
def test_wrong_password(tmp_path: Path, stack: Stack, dialect: str, url: str) -> None:
    wrong = "Wr0ng-pa55word"
    name, result = _bootstrap(tmp_path, {"dialect": dialect, "url": url}, password=wrong)
    assert result.exit_code == 2, result.output
    assert "refused user 'cdc'" in result.output
    assert "CDCMIRROR_SOURCE__PASSWORD" in result.output
    assert wrong not in result.output
    _assert_nothing_created(tmp_path, name)


def test_no_such_schema(tmp_path: Path, stack: Stack, postgres: None) -> None:
    name, result = _bootstrap(tmp_path, {"url": PG_URL, "include": ["no_such_schema.*"]})
    assert result.exit_code == 2, result.output
    assert "names schema 'no_such_schema'" in result.output
    _assert_nothing_created(tmp_path, name)


def test_table_the_replication_user_cannot_read_postgresql(
    tmp_path: Path, stack: Stack, pg_schema: str
) -> None:
    with services.pg_connect() as conn:
        conn.execute(f"CREATE TABLE {pg_schema}.secret (id int PRIMARY KEY)")
        conn.execute(f"REVOKE SELECT ON {pg_schema}.secret FROM cdc")
    name, result = _bootstrap(tmp_path, {"url": PG_URL, "include": [f"{pg_schema}.*"]})
    assert result.exit_code == 2, result.output
    assert f"user 'cdc' cannot read {pg_schema}.secret" in result.output
    assert f"GRANT SELECT ON {pg_schema}.secret TO cdc" in result.output
    _assert_nothing_created(tmp_path, name)


def test_table_the_replication_user_cannot_see_mariadb(
    tmp_path: Path, stack: Stack, mariadb: None
) -> None:
    private = services.unique("private")
    admin = services.maria_connect()
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {private}")
            cur.execute(f"CREATE TABLE {private}.t (id int PRIMARY KEY)")
        name, result = _bootstrap(
            tmp_path,
            {
                "dialect": "mysql",
                "url": f"mysql://cdc@127.0.0.1:3306/{services.TEST_DATABASE}",
                "include": [f"{private}.t"],
            },
        )
        assert result.exit_code == 2, result.output
        assert f"names table '{private}.t'" in result.output
        assert "GRANT SELECT ON" in result.output
        _assert_nothing_created(tmp_path, name)
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE {private}")
        admin.close()


def test_unsupported_type_names_the_column_postgresql(
    tmp_path: Path, stack: Stack, pg_schema: str
) -> None:
    with services.pg_connect() as conn:
        conn.execute(f"CREATE TABLE {pg_schema}.shapes (id int PRIMARY KEY, b box)")
    source = {"url": PG_URL, "include": [f"{pg_schema}.*"]}
    name, result = _bootstrap(tmp_path, source)
    assert result.exit_code == 2, result.output
    assert f"{pg_schema}.shapes.b: type box has no mapping" in result.output
    _assert_nothing_created(tmp_path, name)


def test_unknown_types_as_string_setting(tmp_path: Path, stack: Stack, pg_schema: str) -> None:
    with services.pg_connect() as conn:
        conn.execute(f"CREATE TABLE {pg_schema}.shapes (id int PRIMARY KEY, b box)")
    config = write_config(
        tmp_path,
        source={"url": PG_URL, "include": [f"{pg_schema}.*"], "unknown_types": "string"},
        iceberg={"namespace": pg_schema},
    )
    result = run_cli(config, "bootstrap", "--no-connector", "--output", "json")
    assert result.exit_code == 0, result.output
    assert '"source_type": "box"' in result.stdout
    assert '"iceberg_type": "string"' in result.stdout


def test_mariadb_inet6_is_refused(tmp_path: Path, stack: Stack, mariadb: None) -> None:
    table = services.unique("addrs")
    admin = services.maria_connect()
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, addr inet6)")
        name, result = _bootstrap(
            tmp_path,
            {
                "dialect": "mysql",
                "url": f"mysql://cdc@127.0.0.1:3306/{services.TEST_DATABASE}",
                "include": [f"{services.TEST_DATABASE}.{table}"],
            },
        )
        assert result.exit_code == 2, result.output
        assert f"{services.TEST_DATABASE}.{table}.addr: type inet6 cannot be mirrored" in (
            result.output
        )
        _assert_nothing_created(tmp_path, name)
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP TABLE {table}")
        admin.close()


def test_table_missing_from_the_publication(tmp_path: Path, stack: Stack, postgres: None) -> None:
    schema = services.unique("bs_unpub")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.t (id int PRIMARY KEY)")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO cdc")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO cdc")
    try:
        name, result = _bootstrap(tmp_path, {"url": PG_URL, "include": [f"{schema}.*"]})
        assert result.exit_code == 2, result.output
        assert f"publication 'cdcmirror' does not include {schema}.t" in result.output
        _assert_nothing_created(tmp_path, name)
    finally:
        with services.pg_connect() as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_avro_without_a_reachable_registry(tmp_path: Path, stack: Stack, pg_schema: str) -> None:
    name = services.unique("bad")
    bad = "http://127.0.0.1:9/apis/ccompat/v7"
    config = write_config(
        tmp_path,
        source={"name": name, "url": PG_URL, "include": [f"{pg_schema}.*"]},
        kafka={"format": "avro", "schema_registry_url": bad},
    )
    result = run_cli(config, "bootstrap")
    assert result.exit_code == 2, result.output
    assert f"the schema registry at {bad} does not answer" in result.output
    _assert_nothing_created(tmp_path, name)
    check = run_cli(config, "check")
    assert check.exit_code == 2 and bad in check.output, check.output
