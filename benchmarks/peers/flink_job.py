"""The peer pipeline: Flink SQL reading a Debezium topic into an Iceberg upsert table.

The classic reference architecture for CDC into Iceberg, as its documentation sets it up:
the Kafka source with ``'format' = 'debezium-json'`` (schemas included), Connect's decimal
and time carriers decoded by small Java functions (``java/``), and the Iceberg sink of
``iceberg-flink-runtime`` writing a format-2 table with a primary key in upsert mode, one
commit per checkpoint. Runs in its own virtualenv (PyFlink from PyPI, see ``flink_setup.py``)
and keeps running until it is stopped; ``flink_peer.py`` starts it and decides when it is done.

    python flink_job.py --topic T --group G --warehouse DIR --checkpoint-ms 2000 --jars A;B
"""

from __future__ import annotations

import argparse

from pyflink.table import EnvironmentSettings, TableEnvironment  # type: ignore[import-not-found]

# the benchmark's table (benchmarks/mirror_batch.py COLUMNS) as the Debezium JSON carries it
SOURCE_COLUMNS = (
    "id BIGINT, a INT, b BYTES, c STRING, d STRING, e STRING, f BIGINT, g INT, h BOOLEAN, k DOUBLE"
)
SINK_COLUMNS = (
    "id BIGINT NOT NULL, a INT, b DECIMAL(12, 2), c STRING, d STRING, e TIMESTAMP_LTZ(6), "
    "f TIMESTAMP(6), g DATE, h BOOLEAN, k DOUBLE, PRIMARY KEY (id) NOT ENFORCED"
)
SELECT = (
    "SELECT id, a, CAST(connect_decimal(b, 2) AS DECIMAL(12, 2)), c, d, zoned_timestamp(e), "
    "micro_timestamp(f), connect_date(g), h, k FROM changes"
)
FUNCTIONS = {
    "connect_decimal": "io.cdcmirror.peers.ConnectDecimal",
    "micro_timestamp": "io.cdcmirror.peers.MicroTimestamp",
    "connect_date": "io.cdcmirror.peers.ConnectDate",
    "zoned_timestamp": "io.cdcmirror.peers.ZonedTimestamp",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--table", default="items")
    parser.add_argument("--checkpoint-ms", type=int, default=2000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--jars", required=True, help="the jars, separated by ';'")
    args = parser.parse_args()

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("pipeline.jars", ";".join(f"file://{jar}" for jar in args.jars.split(";")))
    conf.set("parallelism.default", str(args.parallelism))
    conf.set("execution.checkpointing.interval", f"{args.checkpoint_ms}ms")
    conf.set("execution.checkpointing.dir", f"file://{args.warehouse}/_checkpoints")
    for name, cls in FUNCTIONS.items():
        env.execute_sql(f"CREATE TEMPORARY FUNCTION {name} AS '{cls}' LANGUAGE JAVA")
    env.execute_sql(
        f"""CREATE TABLE changes ({SOURCE_COLUMNS}) WITH (
            'connector' = 'kafka',
            'topic' = '{args.topic}',
            'properties.bootstrap.servers' = '{args.bootstrap}',
            'properties.group.id' = '{args.group}',
            'properties.auto.offset.reset' = 'earliest',
            'scan.startup.mode' = 'group-offsets',
            'format' = 'debezium-json',
            'debezium-json.schema-include' = 'true'
        )"""
    )
    env.execute_sql(
        f"""CREATE CATALOG peer WITH (
            'type' = 'iceberg', 'catalog-type' = 'hadoop', 'warehouse' = 'file://{args.warehouse}'
        )"""
    )
    env.execute_sql("CREATE DATABASE IF NOT EXISTS peer.db")
    env.execute_sql(
        f"""CREATE TABLE IF NOT EXISTS peer.db.{args.table} ({SINK_COLUMNS}) WITH (
            'format-version' = '2', 'write.upsert.enabled' = 'true'
        )"""
    )
    env.execute_sql(f"INSERT INTO peer.db.{args.table} {SELECT}").wait()


if __name__ == "__main__":
    main()
