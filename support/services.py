"""Connections to the real services the integration tests run against (no mocks)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pymysql
from confluent_kafka import Consumer

from cdcmirror import paths
from cdcmirror.clients.connect import ConnectClient
from cdcmirror.config.settings import Kafka
from cdcmirror.connectors import password_reference, render_connector, write_secret_file
from cdcmirror.stack.health import delete_topics, topics_named
from cdcmirror.stack_login import ensure_login
from support import made_ledger

ROOT = Path(__file__).resolve().parents[1]
ADMIN_USER = "cdcmirror_admin"
ADMIN_PASSWORD = os.environ.get("CDCMIRROR_DEV_ADMIN_PASSWORD", "cdcmirror_admin")
CDC_PASSWORD = os.environ.get("CDCMIRROR_DEV_CDC_PASSWORD", "cdc_dev_secret")
TEST_DATABASE = "cdcmirror_it"
KAFKA = "127.0.0.1:9092"
CONNECT = "http://127.0.0.1:8083"


def connect_client(timeout: float = 30.0) -> ConnectClient:
    """The local stack's Connect, logged in (its REST API asks for basic auth)."""
    return ConnectClient(CONNECT, timeout, ensure_login())


def replay_connector(name: str, offsets: list[dict[str, Any]]) -> None:
    """Debezium sends history again: the connector stopped, moved back to ``offsets`` (empty:
    its offsets forgotten, a new snapshot), resumed, and running."""
    client = connect_client()
    client.stop(name)
    try:
        if offsets:
            client.alter_offsets(name, offsets)
        else:
            client.reset_offsets(name)
    finally:  # a failed step leaves the connector running for the module's other tests
        client.resume(name)
    client.wait_running(name)


# every name unique() made in this process: the connectors, Kafka topics and replication
# slots named after them are removed when the process is done with them (forget_made)
MADE: list[str] = []


def unique(prefix: str) -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    MADE.append(name)
    made_ledger.record(name)
    return name


@contextmanager
def forgetting_made() -> Iterator[None]:
    """For scripts (benchmarks, chaos): what killed runs left removed first
    (``sweep_dead``), then forget_made() when the block ends, however it ends (a SIGTERM,
    as ``timeout`` sends, ends it as an exit would)."""
    sweep_dead()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        yield
    finally:
        forget_made()


def forget_made() -> None:
    """Delete the connectors, Kafka topics and replication slots named after names this
    process made.

    Left behind, a test run's topics pile up in the stack's broker from run to run (hundreds
    of partitions, gigabytes), and a broker killed by a chaos fault recovers each of them
    before it listens again.
    """
    forget(tuple(MADE))
    MADE.clear()
    made_ledger.forgotten()


def sweep_dead() -> None:
    """Remove what test and benchmark processes that ended before their cleanup made
    (``made_ledger``): their connectors, topics and slots, and the PostgreSQL schemas and
    MariaDB databases of those names."""
    with made_ledger.sweeping() as mine:
        if not mine:
            return
        for ledger, names in made_ledger.dead_ledgers().items():
            forget(tuple(names))
            try:
                with pg_connect() as conn:
                    for name in names:
                        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
            except psycopg.OperationalError:
                pass  # no PostgreSQL on this machine: nothing made there
            try:
                with maria_connect() as maria, maria.cursor() as cur:
                    for name in names:
                        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            except pymysql.err.OperationalError:
                pass  # no MariaDB on this machine: nothing made there
            ledger.unlink()


def forget(made: tuple[str, ...]) -> None:
    """Delete the connectors, Kafka topics and replication slots named after ``made``."""
    if not made:
        return
    client = connect_client()
    for connector in client.names():
        if any(name in connector for name in made):
            client.delete(connector)
    # the source's topics start with the name; MySQL's schema history ends with it
    topics = [t for t in topics_named(KAFKA, "", []) if any(name in t for name in made)]
    delete_topics(KAFKA, topics, timeout=120)
    try:
        with pg_connect() as conn:
            slots = [r[0] for r in conn.execute("SELECT slot_name FROM pg_replication_slots")]
    except psycopg.OperationalError:
        slots = []  # a run without PostgreSQL made no slot
    for slot in slots:
        if any(name in slot for name in made):
            drop_slot(slot)


def pg_connect(dbname: str = TEST_DATABASE) -> psycopg.Connection[Any]:
    return psycopg.connect(
        host="127.0.0.1",
        port=5432,
        user=ADMIN_USER,
        password=ADMIN_PASSWORD,
        dbname=dbname,
        autocommit=True,
    )


def maria_connect(database: str = TEST_DATABASE) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(
        host="127.0.0.1",
        port=3306,
        user=ADMIN_USER,
        password=ADMIN_PASSWORD,
        database=database,
        autocommit=True,
    )


@dataclass
class Registered:
    name: str
    prefix: str
    config: dict[str, str]


@contextmanager
def debezium_connector(dialect: str, tables: list[str]) -> Iterator[Registered]:
    """Register a Debezium connector for ``tables`` (schema.table / db.table), remove it after."""
    name = unique(f"it_{dialect}")
    prefix = name
    secret = write_secret_file(paths.stack_dir() / "secrets" / f"{name}.properties", CDC_PASSWORD)
    params = {
        "host": "127.0.0.1",
        "port": "5432" if dialect == "postgresql" else "3306",
        "user": "cdc",
        "password_ref": password_reference("file", secret),
        "database": TEST_DATABASE,
        "topic_prefix": prefix,
        "table_include_list": ",".join(tables),
        "slot_name": name,
        "server_id": str(5000 + uuid.uuid4().int % 100000),
        "kafka_bootstrap_servers": KAFKA,
    }
    config = render_connector(dialect, params)
    client = connect_client()
    client.put(name, config)
    try:
        client.wait_running(name)
        yield Registered(name, prefix, config)
    finally:
        client.delete(name)
        secret.unlink(missing_ok=True)
        if dialect == "postgresql":
            drop_slot(name)


def drop_slot(slot: str) -> None:
    """Drop a replication slot once its connector has let go of it (waits up to 60 s)."""
    with pg_connect() as conn:
        for _ in range(120):
            row = conn.execute(
                "SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)
            ).fetchone()
            if row is None:
                return
            if not row[0]:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                return
            time.sleep(0.5)


Record = tuple[bytes | None, bytes | None]


def consume(topic: str, count: int, timeout: float = 90.0) -> list[Record]:
    """Read ``count`` records (key, value) from the start of ``topic``, in offset order."""
    consumer = Consumer(
        {
            "bootstrap.servers": KAFKA,
            "group.id": unique("it"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "allow.auto.create.topics": True,
        }
    )
    consumer.subscribe([topic])
    records: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        while len(records) < count and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            records.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return records


def all_records(topic: str, timeout: float = 60.0) -> list[Record]:
    """Every record (key, value) the topic holds now, partition by partition, in order."""
    return [(key, value) for _, _, key, value in placed_records(topic, timeout)]


def placed_records(
    topic: str, timeout: float = 60.0
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Every record the topic holds now as (partition, offset, key, value), partition by
    partition, in offset order."""
    from confluent_kafka import TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": KAFKA, "group.id": unique("all"), "enable.auto.commit": False}
    )
    records: list[tuple[int, int, bytes | None, bytes | None]] = []
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        for p in sorted(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            consumer.assign([TopicPartition(topic, p, low)])
            deadline = time.monotonic() + timeout
            offset, idle = low - 1, 0
            # the last offsets may be transaction markers, which no poll returns
            while offset < high - 1 and idle < 5 and time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is None or msg.error():
                    idle += 1
                    continue
                idle, offset = 0, msg.offset() or 0
                records.append((p, offset, msg.key(), msg.value()))
    finally:
        consumer.close()
    return records


def topic_size(topic: str) -> int:
    """Offsets the topic holds now, summed over its partitions (0 while it does not exist)."""
    from confluent_kafka import TopicPartition

    consumer = Consumer({"bootstrap.servers": KAFKA, "group.id": unique("size")})
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return 0
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in meta.partitions
        )
    finally:
        consumer.close()


def wait_published(prefix: str, timeout: float = 120.0) -> None:
    """PostgreSQL: wait until the connector with topic prefix ``prefix`` has published every
    change committed so far. A logical decoding message written now is decoded after them
    (WAL order) and Debezium publishes it to ``<prefix>.message``; once it is there, so are
    they. A condition, not a guess of Debezium's latency."""

    def emit() -> str:
        marker = f"cdcmirror-settle-{uuid.uuid4().hex}"
        with pg_connect() as conn:
            conn.execute("SELECT pg_logical_emit_message(true, %s, 'settle')", (marker,))
        return marker

    _wait_marker(prefix, f"{prefix}.message", emit, timeout)


def maria_has_signal_table(database: str) -> bool:
    """Whether the MariaDB database has Debezium's signal table (``maria_signal_table``)."""
    with maria_connect(database) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = %s AND table_name = 'cdcmirror_signal'",
            (database,),
        )
        row = cur.fetchone()
        return bool(row and row[0])


def wait_published_maria(prefix: str, database: str, timeout: float = 120.0) -> None:
    """MariaDB: as ``wait_published``, with a row written now to the database's signal table
    (Debezium captures it: the connector lists it; a ``log`` signal, which only logs). The
    binlog holds it after every change committed so far, and the connector publishes it to
    ``<prefix>.<database>.cdcmirror_signal`` after them."""

    def emit() -> str:
        marker = f"cdcmirror-settle-{uuid.uuid4().hex}"
        with maria_connect(database) as conn, conn.cursor() as cur:
            cur.execute(
                "INSERT INTO cdcmirror_signal (id, type, data) "
                "VALUES (%s, 'log', '{\"message\": \"cdcmirror test settle\"}')",
                (marker,),
            )
        return marker

    _wait_marker(prefix, f"{prefix}.{database}.cdcmirror_signal", emit, timeout)


MARKER_AGAIN = 15.0  # seconds before a marker not yet published is followed by another


def _wait_marker(
    prefix: str, topic: str, emit: Callable[[], str], timeout: float, again: float = MARKER_AGAIN
) -> None:
    """Wait until a marker that ``emit`` wrote reaches ``topic``. A connector just
    registered may not have fixed its start yet (a MariaDB snapshot reads its binlog position
    a moment after the task starts, and the signal table's rows are not snapshotted): a
    marker written before that start is never published. So while none has arrived, another
    is written every ``again`` seconds; any of them arriving means every change committed
    before it is published."""
    consumer = Consumer(
        {
            "bootstrap.servers": KAFKA,
            "group.id": unique("settle"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "topic.metadata.refresh.interval.ms": 500,  # the topic may appear only now
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + timeout
    markers = [emit().encode()]
    next_at = time.monotonic() + again
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            value = msg.value() if msg is not None and not msg.error() else None
            if value and any(marker in value for marker in markers):
                return
            if time.monotonic() >= next_at:
                markers.append(emit().encode())
                next_at = time.monotonic() + again
    finally:
        consumer.close()
    raise AssertionError(
        f"connector {prefix}: none of {len(markers)} markers reached {topic} in "
        f"{timeout:.0f} s (is the connector running?)"
    )


def wait_topic_quiet(topic: str, quiet: float = 6.0, timeout: float = 300.0) -> int:
    """Wait until the connector has published what the source committed: the topic grew and
    then did not grow for ``quiet`` seconds. Returns the offsets it holds."""
    deadline = time.monotonic() + timeout
    size, since = topic_size(topic), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = topic_size(topic)
        if now != size:
            size, since = now, time.monotonic()
        elif size and time.monotonic() - since >= quiet:
            return size
    raise AssertionError(f"topic {topic} still growing after {timeout:.0f} s ({size} offsets)")


def create_topic(topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": KAFKA})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(timeout=30)


def partition_of_keys(topic: str, timeout: float = 60.0) -> dict[int, int]:
    """id -> partition of every keyed record in the topic (JSON keys with ``payload.id``)."""
    import json

    from confluent_kafka import TopicPartition

    consumer = Consumer({"bootstrap.servers": KAFKA, "group.id": unique("keys")})
    out: dict[int, int] = {}
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        for p in sorted(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            consumer.assign([TopicPartition(topic, p, low)])
            offset, idle, deadline = low - 1, 0, time.monotonic() + timeout
            while offset < high - 1 and idle < 5 and time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is None or msg.error():
                    idle += 1
                    continue
                idle, offset = 0, msg.offset() or 0
                key = msg.key()
                if key:
                    out[int(json.loads(key)["payload"]["id"])] = p
    finally:
        consumer.close()
    return out


def maria_database(cur: Any, database: str) -> None:
    """Create a MariaDB database that the replication user ``cdc`` may read."""
    cur.execute(f"CREATE DATABASE {database}")
    for host in ("127.0.0.1", "localhost"):
        cur.execute(f"GRANT SELECT ON {database}.* TO 'cdc'@'{host}'")


def publish_schema(conn: psycopg.Connection[Any], schema: str) -> None:
    """Let ``cdc`` read the schema's tables and put them in the ``cdcmirror`` publication."""
    conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO cdc")
    conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO cdc")
    conn.execute(f"ALTER PUBLICATION cdcmirror ADD TABLES IN SCHEMA {schema}")


def pg_signal_table(conn: psycopg.Connection[Any], schema: str) -> None:
    """Debezium's signal table in the schema, as sql/postgresql/signal_table.sql makes it."""
    sql = (ROOT / "sql" / "postgresql" / "signal_table.sql").read_text()
    body = sql.replace(':"schema"', schema)
    for statement in (s.strip() for s in body.split(";")):
        if statement and not all(line.startswith("--") for line in statement.splitlines()):
            conn.execute(statement)


def maria_signal_table(cur: Any, database: str) -> None:
    """Debezium's signal table in the database, as sql/mysql/signal_table.sql makes it."""
    cur.execute(f"USE {database}")
    sql = (ROOT / "sql" / "mysql" / "signal_table.sql").read_text()
    for statement in (s.strip() for s in sql.split(";")):
        lines = [line for line in statement.splitlines() if not line.startswith("--")]
        if lines:
            cur.execute("\n".join(lines))


def schema_source_env(schema: str) -> dict[str, str]:
    """``CDCMIRROR_*`` settings that mirror every table of a test-database schema."""
    return {
        "CDCMIRROR_SOURCE__URL": f"postgresql://cdc@127.0.0.1:5432/{TEST_DATABASE}",
        "CDCMIRROR_SOURCE__PASSWORD": CDC_PASSWORD,
        "CDCMIRROR_SOURCE__INCLUDE": f"{schema}.*",
        "CDCMIRROR_SOURCE__NAME": schema,
        "CDCMIRROR_ICEBERG__NAMESPACE": schema,
    }


def drop_published_schema(schema: str, connector: str | None = None) -> None:
    """Remove a test schema: its connector and replication slot, its publication entry."""
    if connector:
        connect_client().delete(connector)
        drop_slot(connector.replace("-", "_"))
    with pg_connect() as conn:
        conn.execute(f"ALTER PUBLICATION cdcmirror DROP TABLES IN SCHEMA {schema}")
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on TCP ``port`` on this host (IPv4 and
    IPv6; an IPv4-mapped IPv6 address as its IPv4 text), from ``/proc/net/tcp*``."""
    import ipaddress

    found: set[str] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            address, _, hex_port = local.partition(":")
            if state != "0A" or int(hex_port, 16) != port or len(address) != width:
                continue
            # each 32-bit word of the address is written in the host's (little-endian) order
            words = [bytes.fromhex(address[i : i + 8])[::-1] for i in range(0, width, 8)]
            ip = ipaddress.ip_address(b"".join(words))
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
                ip = ip.ipv4_mapped
            found.add(str(ip))
    return found


LOOPBACK = {"127.0.0.1", "::1"}


def register_schema(subject: str, schema: Mapping[str, object]) -> int:
    request = urllib.request.Request(
        f"{Kafka().schema_registry_url}/subjects/{subject}/versions",
        data=json.dumps({"schema": json.dumps(schema)}).encode(),
        method="POST",
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=15) as resp:
        return int(json.loads(resp.read())["id"])
