"""The local demo, end to end on the local defaults (grows as bootstrap/mirror/reconcile land).

Creates a sample `shop.public.customers` table in the provisioned PostgreSQL, registers a
Debezium connector for it, changes a few rows, and lands every change event in Iceberg
(`shop_mirror.customers_events`, embedded catalog under ./.cdcmirror/) with Spark.
"""

from __future__ import annotations

import os
import sys
import time

import psycopg
from confluent_kafka import Consumer

from cdcmirror import paths
from cdcmirror.config import load_config
from cdcmirror.connect_client import ConnectClient
from cdcmirror.connectors import password_reference, render_connector, write_secret_file

# 3 snapshot reads of the seed rows, then at least the update and the insert
MIN_EVENTS = 5
ADMIN = os.environ.get("CDCMIRROR_DEV_ADMIN_PASSWORD", "cdcmirror_admin")


def say(message: str) -> None:
    print(f"quickstart: {message}", file=sys.stderr, flush=True)


def count_records(bootstrap: str, topic: str, want: int, timeout: float = 120.0) -> int:
    """Read the topic from the start until ``want`` records arrived (or the timeout)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"quickstart-{time.time()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + timeout
    try:
        while seen < want and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                seen += 1
    finally:
        consumer.close()
    return seen


def main() -> None:
    config = load_config()
    name = str(config.get("source", "name"))
    bootstrap = str(config.get("kafka", "bootstrap_servers"))
    password = str(config.get("source", "password")) or os.environ.get(
        "CDCMIRROR_DEV_CDC_PASSWORD", "cdc_dev_secret"
    )

    say("sample table shop.public.customers")
    with psycopg.connect(
        host="127.0.0.1", user="cdcmirror_admin", password=ADMIN, dbname="shop", autocommit=True
    ) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS public.customers (id int PRIMARY KEY, "
            "name text NOT NULL, email text, balance numeric(12,2))"
        )
        conn.execute(
            "INSERT INTO public.customers VALUES (1, 'Ada', 'ada@example.com', 10.50),"
            " (2, 'Linus', 'linus@example.com', 0), (3, 'Grace', NULL, 99.99)"
            " ON CONFLICT (id) DO NOTHING"
        )

        say(f"registering Debezium connector {name!r}")
        secret = write_secret_file(paths.stack_dir() / "secrets" / f"{name}.properties", password)
        connector = render_connector(
            "postgresql",
            {
                "host": "127.0.0.1",
                "port": "5432",
                "user": "cdc",
                "database": "shop",
                "password_ref": password_reference("file", secret),
                "topic_prefix": name,
                "table_include_list": "public.customers",
                "slot_name": f"cdcmirror_{name}",
                "server_id": "5400",
                "kafka_bootstrap_servers": bootstrap,
            },
        )
        client = ConnectClient(str(config.get("connect", "url")))
        client.put(name, connector)
        client.wait_running(name)

        conn.execute("UPDATE public.customers SET balance = balance + 1 WHERE id = 1")
        conn.execute(
            "INSERT INTO public.customers VALUES (4, 'Edsger', NULL, 1) "
            "ON CONFLICT (id) DO UPDATE SET balance = public.customers.balance + 1"
        )
        source_rows = conn.execute("SELECT count(*) FROM public.customers").fetchone()

    topic = f"{name}.public.customers"
    events = count_records(bootstrap, topic, MIN_EVENTS)
    if events < MIN_EVENTS:
        say(f"only {events} change events arrived in {topic} within 120s; see the Connect log")
        sys.exit(1)
    say(f"change events are arriving in Kafka topic {topic}")

    from cdcmirror.spark.raw_events import append_raw_events
    from cdcmirror.spark.session import build_spark_session

    spark = build_spark_session(config, "cdcmirror-quickstart")
    table = f"{config.get('iceberg', 'namespace')}.customers_events"
    append_raw_events(
        spark, bootstrap, [topic], table, str(config.state_dir / "checkpoints" / "quickstart")
    )
    landed = spark.table(table).count()
    spark.stop()
    print(f"source rows: {source_rows[0] if source_rows else 0}")
    print(f"change events landed in Iceberg table {table}: {landed}")
    if landed == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
