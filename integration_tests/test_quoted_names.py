"""Source names with a single quote or a backslash (legal when quoted) are mirrored: every
place that writes a name into Spark SQL as a string literal quotes it as Spark reads it."""

from __future__ import annotations

import os

from cdcmirror.commands.mirror import mirror
from cdcmirror.config import load_config
from cdcmirror.stack.control import Stack
from integration_tests import services
from integration_tests.bootstrap_env import run_cli
from integration_tests.conftest import SparkWorld
from integration_tests.mirror_fixture import bootstrap, make_config

LONG = "x" * 20_000  # stored out of line (TOAST): an update of another column leaves it out


def _source_rows(table: str) -> list[tuple[object, ...]]:
    with services.pg_connect() as conn:
        sql = f"""SELECT "o'k", "it's", "a\\b" FROM {table} ORDER BY 1"""
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def test_columns_named_with_a_quote_or_a_backslash_are_mirrored(
    stack: Stack, postgres: None, spark_world: SparkWorld
) -> None:
    schema = services.unique("mir_quote")
    table = f"{schema}.items"
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(
            f"""CREATE TABLE {table} ("o'k" bigint PRIMARY KEY, "it's" text, "a\\b" integer)"""
        )
        conn.execute(f"""ALTER TABLE {table} ALTER COLUMN "it's" SET STORAGE EXTERNAL""")
        for i in range(1, 7):
            conn.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (i, f"{i}{LONG}", i))
        services.publish_schema(conn, schema)
    config = make_config(
        spark_world.config.base_dir, schema, "postgresql", f"{schema}.*", services.TEST_DATABASE
    )
    bootstrap(config)
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    try:
        with services.pg_connect() as conn:
            conn.execute(f"""UPDATE {table} SET "a\\b" = 10 WHERE "o'k" IN (1, 2)""")  # TOAST
            conn.execute(f"""UPDATE {table} SET "o'k" = 100 WHERE "o'k" = 3""")  # key change
            conn.execute(f"""UPDATE {table} SET "a\\b" = 11, "o'k" = 101 WHERE "o'k" = 4""")
            conn.execute(f"""DELETE FROM {table} WHERE "o'k" = 5""")
        services.wait_published(schema)
        mirror(load_config(config), available_now=True)
        got = spark_world.spark.sql(
            f"SELECT `o'k`, `it's`, `a\\b` FROM {schema}_mirror.items ORDER BY 1"
        ).collect()
        assert [tuple(r) for r in got] == _source_rows(table)
        deep = run_cli(config, "reconcile", "--deep")
        assert deep.exit_code == 0, deep.output
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")
