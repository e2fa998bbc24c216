"""`cdcmirror bootstrap --initial-load spark` against real PostgreSQL, MariaDB, Kafka Connect
with Debezium, Spark and Iceberg: tables read over JDBC in parallel while a workload keeps
changing them, then the mirror catches up, and each table equals its source row by row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from cdcmirror.mirror.high_water import HIGH_WATER
from cdcmirror.spark.iceberg import scanned_mark
from cdcmirror.sql_text import as_of
from cdcmirror.stack.control import Stack
from cdcmirror.table_properties import LOAD_PENDING, LOAD_PROPERTY
from support import mirror_scenarios as sc
from support import services
from support.bootstrap_env import run_cli
from support.load_env import PAIRS_SQL, PairsWorkload, changing, fill_items
from support.mirror_env import Source, Workload, create_table_sql
from support.mirror_fixture import Mirrored, make_config, pg_config
from support.spark import SparkWorld

SEED = 20261125
ROWS = 12_000
LOAD = {"initial_load": "spark", "rows_per_partition": 2_500}


@dataclass
class Loaded:
    m: Mirrored
    pairs: PairsWorkload
    output: dict[str, Any]


def _pairs_rows(pairs: PairsWorkload, spark: Any, identifier: str) -> None:
    """The pairs table equals its source, row by row."""
    conn = pairs.connect()
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT tenant, code, n, big FROM {pairs.table}")
        expected = {(r[0], r[1]): (r[2], r[3]) for r in cur.fetchall()}
    finally:
        conn.close()
    rows = spark.sql(f"SELECT tenant, code, n, big FROM {identifier}").collect()
    actual = {(r[0], r[1]): (r[2], r[3]) for r in rows}
    assert len(actual) == len(rows), f"{identifier}: a key appears twice"
    assert set(actual) == set(expected), (
        f"{identifier}: missing {sorted(set(expected) - set(actual))[:5]}, "
        f"extra {sorted(set(actual) - set(expected))[:5]}"
    )
    wrong = [k for k, v in expected.items() if actual[k] != v]
    assert not wrong, f"{identifier}: {len(wrong)} rows differ, e.g. {wrong[:3]}"


def _zstd_files(spark: Any, identifier: str) -> None:
    """The table's data files are zstd-compressed (Iceberg's Java writer reads a table
    without a codec property as gzip, which writes 1.5x slower)."""
    import pyarrow.parquet as pq

    paths = [r[0] for r in spark.sql(f"SELECT file_path FROM {identifier}.files").collect()]
    assert paths, identifier
    for path in paths:
        meta = pq.ParquetFile(path.removeprefix("file:")).metadata
        assert meta.row_group(0).column(0).compression == "ZSTD", path


def _loaded_then_same(m: Mirrored, pairs: PairsWorkload, spark: Any, order: str) -> None:
    """The load's commit (the first: ``order`` ""; the newest: "DESC") carries its summary
    and the high-water mark of the rows it wrote (so the first batch reads no position);
    after the mirror caught up, both tables equal the source."""
    commit = spark.sql(
        f"SELECT snapshot_id, summary FROM {m.identifier}.snapshots "
        f"ORDER BY committed_at {order} LIMIT 1"
    ).first()
    assert commit is not None and "cdcmirror.initial-load" in commit[1], commit
    mark = json.loads(commit[1][HIGH_WATER])
    loaded = scanned_mark(spark, as_of(m.identifier, commit[0]), len(mark))
    assert mark == loaded and mark[0] == 0, (commit, loaded)
    sc.settle(m)
    m.mirror()
    assert m.assert_same() > ROWS // 2
    _pairs_rows(pairs, spark, f"{m.name}_mirror.pairs")


def _bootstrap_while_changing(
    m: Mirrored, pairs: PairsWorkload, world: SparkWorld
) -> dict[str, Any]:
    with changing(m.workload.run, pairs.run):
        result = run_cli(m.config_path, "bootstrap", "--output", "json")
        assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def _check_loaded(loaded: Loaded, world: SparkWorld) -> None:
    m, out = loaded.m, loaded.output
    load = out["initial_load"]
    assert load and load["mode"] == "spark", out
    by_table = {t["iceberg"]: t for t in load["tables"]}
    items = by_table[m.identifier]
    assert items["rows"] >= ROWS // 2 and items["rows_not_loaded"] == 0, items
    assert items["reads"] >= 4, items  # split into parallel reads
    config = services.connect_client().config(f"cdcmirror-{m.name}")
    assert config["snapshot.mode"] == "no_data", config
    _zstd_files(world.spark, m.identifier)
    _loaded_then_same(m, loaded.pairs, world.spark, "")


@pytest.fixture(scope="module")
def pg_loaded(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Loaded]:
    schema = services.unique("load_pg")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(create_table_sql("postgresql", f"{schema}.items"))
        conn.execute(PAIRS_SQL["postgresql"].format(t=f"{schema}.pairs"))
        services.publish_schema(conn, schema)
    source = Source("postgresql", f"{schema}.items", services.pg_connect)
    workload = Workload(source, SEED, chains=True)
    workload.run(300)
    fill_items(workload, ROWS)
    pairs = PairsWorkload("postgresql", f"{schema}.pairs", services.pg_connect, SEED)
    pairs.run(200)
    config = pg_config(spark_world.config.base_dir, schema, bootstrap=LOAD)
    m = Mirrored(schema, source, config, spark_world.spark, workload, [])
    try:
        yield Loaded(m, pairs, _bootstrap_while_changing(m, pairs, spark_world))
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


@pytest.fixture(scope="module")
def maria_loaded(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Loaded]:
    database = services.unique("load_maria")
    admin = services.maria_connect()
    with admin.cursor() as cur:
        services.maria_database(cur, database)
        cur.execute(create_table_sql("mysql", f"{database}.items") + " CHARACTER SET utf8mb4")
        cur.execute(PAIRS_SQL["mysql"].format(t=f"{database}.pairs"))
    source = Source("mysql", f"{database}.items", lambda: services.maria_connect(database))
    workload = Workload(source, SEED, chains=True)
    workload.run(300)
    fill_items(workload, ROWS)
    pairs = PairsWorkload(
        "mysql", f"{database}.pairs", lambda: services.maria_connect(database), SEED
    )
    pairs.run(200)
    config = make_config(
        spark_world.config.base_dir,
        database,
        "mysql",
        f"{database}.*",
        database,
        bootstrap=LOAD,
        mirror={"max_events_per_batch": 1500},  # many small batches
    )
    m = Mirrored(database, source, config, spark_world.spark, workload, [])
    try:
        yield Loaded(m, pairs, _bootstrap_while_changing(m, pairs, spark_world))
    finally:
        services.connect_client().delete(f"cdcmirror-{database}")
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE {database}")
        admin.close()


def _drift(spark: Any, items: str, pairs: str) -> None:
    """Change, delete and add mirror rows behind the mirror's back."""
    ids = [r[0] for r in spark.sql(f"SELECT id FROM {items} ORDER BY id").take(6)]
    spark.sql(f"DELETE FROM {items} WHERE id IN ({ids[0]}, {ids[1]})")
    spark.sql(f"UPDATE {items} SET name = concat(coalesce(name, ''), '!') WHERE id = {ids[2]}")
    spark.sql(
        f"INSERT INTO {items} SELECT id + 10000000 AS id, * EXCEPT (id) "
        f"FROM {items} WHERE id IN ({ids[3]}, {ids[4]})"
    )
    first, last = spark.sql(f"SELECT tenant, code FROM {pairs} ORDER BY tenant, code").take(2)
    spark.sql(f"UPDATE {pairs} SET n = n + 1 WHERE tenant = {first[0]} AND code = '{first[1]}'")
    spark.sql(f"DELETE FROM {pairs} WHERE tenant = {last[0]} AND code = '{last[1]}'")


def _reload_repairs(loaded: Loaded, world: SparkWorld) -> None:
    """`repair --method reload` re-loads both tables by Spark while the source keeps
    changing and changes wait in Kafka unapplied; after the mirror caught up, both equal
    the source. A mirror job holding a table's lease makes the re-load refuse (``auto``
    turns to Debezium's path then)."""
    from cdcmirror.catalog import load_catalog
    from cdcmirror.catalog.leases import acquire, my_lease, release

    m, pairs, spark = loaded.m, loaded.pairs, world.spark
    sc.settle(m)
    m.mirror()
    items, pair_table = m.identifier, f"{m.name}_mirror.pairs"
    _drift(spark, items, pair_table)
    m.workload.run(200)  # changes the mirror has not applied when the re-load reads
    pairs.run(100)
    catalog = load_catalog(m.config)
    lease = my_lease("a mirror job of the test")
    acquire(catalog, [items], lease)
    try:
        held = run_cli(m.config_path, "repair", "--table", "items", "--method", "reload")
        big = {"CDCMIRROR_BOOTSTRAP__INITIAL_LOAD_MIN_ROWS": "1"}
        auto = run_cli(m.config_path, "repair", "--table", "items", env=big)
    finally:
        release(catalog, [items], lease)
    assert held.exit_code == 2 and "being mirrored by another cdcmirror job" in held.output
    # auto: big enough for a re-load, but held: Debezium's path (no signal table here)
    assert "re-reading through Debezium instead of re-loading by Spark" in auto.output
    assert auto.exit_code == 2 and "has no Debezium signal table" in auto.output, auto.output
    with changing(m.workload.run, pairs.run):
        for table in ("items", "pairs"):
            result = run_cli(
                m.config_path, "--output", "json", "repair", "--table", table, "--method", "reload"
            )
            assert result.exit_code == 0, result.output
            out = json.loads(result.stdout)
            assert out["method"] == "reload" and out["reloaded"]["rows"] > 0, out
            assert out["reloaded"]["bad"] == 0 and out["start"], out
    _loaded_then_same(m, pairs, spark, "DESC")


def test_postgresql_load_while_changing_equals_the_source(
    pg_loaded: Loaded, spark_world: SparkWorld
) -> None:
    """The slot's exported snapshot is read in parallel block ranges while inserts, updates,
    deletes, key changes and unchanged-TOAST updates go on; after the mirror caught up,
    both tables (one keyed by two columns) equal the source."""
    _check_loaded(pg_loaded, spark_world)


def test_mariadb_load_while_changing_equals_the_source(
    maria_loaded: Loaded, spark_world: SparkWorld
) -> None:
    """MariaDB: key ranges read after the connector's first offset, changes going on, the
    mirror in batches of 1,500 events; both tables equal the source."""
    _check_loaded(maria_loaded, spark_world)


def test_postgresql_reload_repairs_drift_while_changing(
    pg_loaded: Loaded, spark_world: SparkWorld
) -> None:
    """`repair --method reload` on PostgreSQL: one exported snapshot for every read."""
    _reload_repairs(pg_loaded, spark_world)


def test_mariadb_reload_repairs_drift_while_changing(
    maria_loaded: Loaded, spark_world: SparkWorld
) -> None:
    """`repair --method reload` on MariaDB: key ranges read from the binlog's position on."""
    _reload_repairs(maria_loaded, spark_world)


def test_postgresql_reload_after_a_truncate_the_mirror_applied(
    pg_loaded: Loaded, spark_world: SparkWorld
) -> None:
    """The mirror applied a TRUNCATE (the table keeps its position); changes committed
    after it wait unapplied when the table is re-loaded. They are the re-load's, dropped,
    not taken for a restarted source history that the TRUNCATE's position would stop."""
    m, pairs, spark = pg_loaded.m, pg_loaded.pairs, spark_world.spark
    with services.pg_connect() as conn:
        conn.execute(f"TRUNCATE {pairs.table}")
    pairs.keys = []
    pairs.run(40)
    sc.settle(m)
    m.mirror()
    pair_table = f"{m.name}_mirror.pairs"
    _pairs_rows(pairs, spark, pair_table)
    pairs.run(60)  # after the TRUNCATE, before the re-load: the re-load holds them
    result = run_cli(m.config_path, "repair", "--table", "pairs", "--method", "reload")
    assert result.exit_code == 0, result.output
    pairs.run(30)
    sc.settle(m)
    m.mirror()
    _pairs_rows(pairs, spark, pair_table)


def _snapshots(spark: Any, identifier: str) -> list[int]:
    rows = spark.sql(f"SELECT snapshot_id FROM {identifier}.snapshots").collect()
    return sorted(int(r[0]) for r in rows)


def test_mariadb_reload_is_not_undone_by_a_replayed_truncate(
    maria_loaded: Loaded, spark_world: SparkWorld
) -> None:
    """Issue 67, item 2: the mirror applied a TRUNCATE, the table was re-loaded, then the
    connector read the binlog again from before the TRUNCATE (Debezium's at-least-once
    restart). Every replayed change is older than the re-load's read, so the re-loaded rows
    hold it: nothing is committed and the table still equals the source. Before, the
    replayed TRUNCATE emptied the re-loaded rows (their snapshot-phase position is older
    than any streamed change)."""
    m, pairs, spark = maria_loaded.m, maria_loaded.pairs, spark_world.spark
    client, name = services.connect_client(), f"cdcmirror-{m.name}"
    pair_table = f"{m.name}_mirror.pairs"
    sc.settle(m)
    m.mirror()
    older = client.offsets(name)  # the connector's position before the TRUNCATE
    conn = pairs.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"TRUNCATE TABLE {pairs.table}")
        conn.commit()
    finally:
        conn.close()
    pairs.keys = []
    pairs.run(40)
    sc.settle(m)
    m.mirror()
    _pairs_rows(pairs, spark, pair_table)
    pairs.run(60)  # after the TRUNCATE, before the re-load: the re-load holds them
    result = run_cli(m.config_path, "repair", "--table", "pairs", "--method", "reload")
    assert result.exit_code == 0, result.output
    sc.settle(m)
    m.mirror()
    _pairs_rows(pairs, spark, pair_table)
    before = _snapshots(spark, pair_table)
    services.replay_connector(name, older)
    sc.settle(m)
    m.mirror()
    assert _snapshots(spark, pair_table) == before, "replayed changes must commit nothing"
    _pairs_rows(pairs, spark, pair_table)


def test_mariadb_mirror_refuses_a_table_whose_load_did_not_finish(
    maria_loaded: Loaded, spark_world: SparkWorld
) -> None:
    """Issue 67, item 5: a table whose Spark load began and did not finish (its property
    still ``pending``) stops the mirror with exit 2 naming bootstrap, instead of having
    changes applied onto the rows it happens to hold; bootstrap loads it again and the
    mirror then runs, equal to the source. Before, the mirror ran on without a word."""
    m, pairs, spark = maria_loaded.m, maria_loaded.pairs, spark_world.spark
    pair_table = f"{m.name}_mirror.pairs"
    spark.sql(f"ALTER TABLE {pair_table} SET TBLPROPERTIES ('{LOAD_PROPERTY}' = '{LOAD_PENDING}')")
    spark.sql(f"DELETE FROM {pair_table} WHERE n % 2 = 0")  # what a stopped load leaves
    pairs.run(30)
    refused = run_cli(m.config_path, "mirror", "--available-now")
    assert refused.exit_code == 2, refused.output
    assert f"initial load of {pair_table} did not finish" in refused.output, refused.output
    assert "cdcmirror bootstrap" in refused.output, refused.output
    again = run_cli(m.config_path, "bootstrap")
    assert again.exit_code == 0, again.output
    sc.settle(m)
    m.mirror()
    _pairs_rows(pairs, spark, pair_table)
