"""The local demo, end to end on the local defaults: bootstrap -> mirror -> reconcile.

1. Creates a small shop in the provisioned PostgreSQL database `shop`: customers, products,
   orders and order_items with a few hundred rows, and Debezium's signal table.
2. `cdcmirror bootstrap`: discovers the four tables, creates their Iceberg tables in
   `shop_mirror` (embedded catalog under ./.cdcmirror/) and registers the connector.
3. Starts the continuous `cdcmirror mirror` job (log: .cdcmirror/quickstart-mirror.log).
4. Runs a small workload while the job mirrors it: new orders, price changes, a customer
   who changes e-mail, cancelled orders deleted.
5. `cdcmirror reconcile --deep`: waits for the in-flight events, then compares every table
   with its source, row by row; the report is also written to
   .cdcmirror/reconcile-report.md. Stops the mirror job and exits with reconcile's code.

Beside the shop's tables, a plain event stream: click events (JSON) produced to the topic
`shop.clicks` before bootstrap (which infers the table `shop_mirror.clicks` from them) and
during the workload, appended by the same mirror job and checked by reconcile against the
topic (`CDCMIRROR_STREAMS__0__*`, the same as a `[[streams]]` entry in a config file).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from cdcmirror.clients.connect import ConnectClient
from cdcmirror.config import load_config

ADMIN = os.environ.get("CDCMIRROR_DEV_ADMIN_PASSWORD", "cdcmirror_admin")
CDC = os.environ.get("CDCMIRROR_DEV_CDC_PASSWORD", "cdc_dev_secret")
ROOT = Path(__file__).resolve().parents[1]
WORKLOAD_SECONDS = 20
LEGACY_CONNECTOR = "shop"
LEGACY_TOPIC = "shop.public.customers"
LEGACY_SLOT = "cdcmirror_shop"
CLICKS = "shop.clicks"
STREAM = {  # [[streams]] entry 0, as environment variables
    "CDCMIRROR_STREAMS__0__TOPIC": CLICKS,
    "CDCMIRROR_STREAMS__0__TABLE": "clicks",
    "CDCMIRROR_STREAMS__0__SCHEMA": "infer",
    "CDCMIRROR_STREAMS__0__PARTITION": "day(_kafka_timestamp)",
}

SCHEMA = """
CREATE TABLE IF NOT EXISTS public.customers (
    id bigint PRIMARY KEY, name text NOT NULL, email text, country char(2),
    created_at timestamptz NOT NULL DEFAULT now());
-- an older quickstart made a smaller customers table
ALTER TABLE public.customers ADD COLUMN IF NOT EXISTS country char(2);
ALTER TABLE public.customers ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL DEFAULT now();
CREATE TABLE IF NOT EXISTS public.products (
    sku varchar(20) PRIMARY KEY, title text NOT NULL, price numeric(10,2) NOT NULL,
    in_stock integer NOT NULL, tags text[]);
CREATE TABLE IF NOT EXISTS public.orders (
    id bigint PRIMARY KEY, customer_id bigint NOT NULL, status varchar(12) NOT NULL,
    ordered_on date NOT NULL, total numeric(12,2), note jsonb);
CREATE TABLE IF NOT EXISTS public.order_items (
    order_id bigint NOT NULL, line smallint NOT NULL, sku varchar(20) NOT NULL,
    quantity integer NOT NULL, unit_price numeric(10,2) NOT NULL,
    PRIMARY KEY (order_id, line))
"""

SEED = """
INSERT INTO public.customers (id, name, email, country)
SELECT i, 'Customer ' || i, 'customer' || i || '@example.com',
       (ARRAY['DE','FR','NO','US'])[1 + i % 4]
FROM generate_series(1, 200) i ON CONFLICT DO NOTHING;
INSERT INTO public.products
SELECT 'SKU-' || i, 'Product ' || i, round((5 + i * 1.25)::numeric, 2), 10 + i % 50,
       ARRAY['demo', 'batch-' || i % 3]
FROM generate_series(1, 50) i ON CONFLICT DO NOTHING;
INSERT INTO public.orders
SELECT i, 1 + i % 200, 'paid', DATE '2026-01-01' + i % 300, NULL, '{"channel": "web"}'
FROM generate_series(1, 300) i ON CONFLICT DO NOTHING;
INSERT INTO public.order_items
SELECT o, l, 'SKU-' || (1 + (o * l) % 50), 1 + (o + l) % 3, 9.99
FROM generate_series(1, 300) o, generate_series(1, 2) l ON CONFLICT DO NOTHING;
UPDATE public.orders o SET total = s.total FROM (
    SELECT order_id, sum(quantity * unit_price) AS total FROM public.order_items GROUP BY 1
) s WHERE s.order_id = o.id AND o.total IS NULL
"""


def say(message: str) -> None:
    print(f"quickstart: {message}", file=sys.stderr, flush=True)


def admin() -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(
        host="127.0.0.1", user="cdcmirror_admin", password=ADMIN, dbname="shop", autocommit=True
    )


def drop_slot(slot: str, timeout: float = 60.0) -> None:
    """Drop a replication slot once its (deleted) connector has let go of it."""
    deadline = time.monotonic() + timeout
    with admin() as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)
            ).fetchone()
            if row is None:
                return
            if not row[0]:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                return
            time.sleep(2)
    raise SystemExit(f"replication slot {slot} stays in use; stop its connector and retry")


def cdcmirror(*args: str, env: dict[str, str]) -> int:
    return subprocess.run([sys.executable, "-m", "cdcmirror.cli", *args], env=env).returncode


def workload(seconds: float) -> int:
    """New orders with lines, price changes, e-mail changes, cancelled orders deleted."""
    rnd = random.Random(7)
    done = 0
    deadline = time.monotonic() + seconds
    with admin() as conn:
        row = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM orders").fetchone()
        next_id = int(str(row[0])) if row else 1
        while time.monotonic() < deadline:
            with conn.transaction():
                order = next_id
                next_id += 1
                conn.execute(
                    "INSERT INTO orders VALUES (%s, %s, 'new', current_date, NULL, %s)",
                    (order, rnd.randint(1, 200), '{"channel": "app"}'),
                )
                for line in range(1, rnd.randint(1, 4) + 1):
                    sku = f"SKU-{rnd.randint(1, 50)}"
                    conn.execute(
                        "INSERT INTO order_items SELECT %s, %s, sku, %s, price FROM products "
                        "WHERE sku = %s",
                        (order, line, rnd.randint(1, 5), sku),
                    )
                conn.execute(
                    "UPDATE orders SET total = (SELECT sum(quantity * unit_price) FROM "
                    "order_items WHERE order_id = %s), status = 'paid' WHERE id = %s",
                    (order, order),
                )
            kind = rnd.random()
            if kind < 0.3:
                conn.execute(
                    "UPDATE products SET price = price * 1.05, in_stock = in_stock - 1 "
                    "WHERE sku = %s",
                    (f"SKU-{rnd.randint(1, 50)}",),
                )
            elif kind < 0.5:
                conn.execute(
                    "UPDATE customers SET email = 'new' || id || '@example.org' WHERE id = %s",
                    (rnd.randint(1, 200),),
                )
            elif kind < 0.6:
                victim = rnd.randint(1, order)
                with conn.transaction():
                    conn.execute("DELETE FROM order_items WHERE order_id = %s", (victim,))
                    conn.execute("DELETE FROM orders WHERE id = %s", (victim,))
            done += 1
            time.sleep(0.05)
    return done


def clicks(bootstrap_servers: str, count: int) -> None:
    """``count`` click events (JSON) into the ``shop.clicks`` topic (made when missing)."""
    admin_client = AdminClient({"bootstrap.servers": bootstrap_servers})
    if CLICKS not in admin_client.list_topics(timeout=10).topics:
        for future in admin_client.create_topics([NewTopic(CLICKS, 2, 1)]).values():
            future.result()
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    rnd = random.Random()
    for _ in range(count):
        customer = rnd.randint(1, 200)
        event = {
            "customer_id": customer,
            "page": rnd.choice(["/", "/search", f"/product/SKU-{rnd.randint(1, 50)}", "/cart"]),
            "duration_ms": rnd.randint(20, 9000),
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        producer.produce(CLICKS, json.dumps(event).encode(), key=str(customer).encode())
    producer.flush(30)


def main() -> None:
    config = load_config(environ={**os.environ, **STREAM})
    state = config.state_dir
    state.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CDCMIRROR_SOURCE__PASSWORD": CDC, **STREAM}
    kafka = config.kafka.bootstrap_servers

    say("sample shop in PostgreSQL database 'shop': customers, products, orders, order_items")
    with admin() as conn:
        for statement in SCHEMA.split(";"):
            conn.execute(statement)
        for statement in SEED.split(";"):
            conn.execute(statement)
        signal_sql = (ROOT / "sql" / "postgresql" / "signal_table.sql").read_text()
        for statement in signal_sql.replace(':"schema"', "public").split(";"):
            lines = [line for line in statement.splitlines() if not line.startswith("--")]
            if "".join(lines).strip():
                conn.execute("\n".join(lines))

    # The first quickstart registered a connector named "shop" on the same replication slot
    # and topic prefix; its events are not this demo's (it never snapshotted the columns
    # added above), so it goes, with its topic.
    client = ConnectClient.of(config.connect)
    if LEGACY_CONNECTOR in client.names():
        say("removing the connector and topic of an earlier quickstart")
        client.delete(LEGACY_CONNECTOR)
        admin_client = AdminClient({"bootstrap.servers": config.kafka.bootstrap_servers})
        for future in admin_client.delete_topics([LEGACY_TOPIC]).values():
            future.result()
        drop_slot(LEGACY_SLOT)

    say(f"300 click events (JSON) into the topic {CLICKS}: a plain event stream")
    clicks(kafka, 300)
    say("cdcmirror bootstrap")
    if cdcmirror("bootstrap", env=env) != 0:
        sys.exit(2)

    log = state / "quickstart-mirror.log"
    say(f"cdcmirror mirror (continuous; log {log})")
    with log.open("w") as out:
        job = subprocess.Popen(
            [sys.executable, "-m", "cdcmirror.cli", "--log-level", "INFO", "mirror"],
            env={**env, "CDCMIRROR_MIRROR__TRIGGER": "2 seconds"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        say(f"workload for {WORKLOAD_SECONDS} s while the mirror runs")
        changes = workload(WORKLOAD_SECONDS)
        clicks(kafka, 700)
        say(f"{changes} transactions and 700 clicks written; cdcmirror reconcile --deep")
        report = state / "reconcile-report.md"
        code = cdcmirror("reconcile", "--deep", "--settle", "300", "--report", str(report), env=env)
    finally:
        job.send_signal(signal.SIGTERM)
        try:
            job.wait(timeout=180)
        except subprocess.TimeoutExpired:
            job.kill()
    if job.returncode not in (0, None):
        say(f"the mirror job ended with {job.returncode}; see {log}")
        sys.exit(job.returncode or 1)
    say("tables in sync" if code == 0 else f"reconcile exit {code}; see {report}")
    sys.exit(code)


if __name__ == "__main__":
    main()
