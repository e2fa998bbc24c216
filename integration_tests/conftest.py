"""Fixtures for the real services. A service that is missing is a failure, never a skip."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdcmirror.stack.control import Stack
from support import services
from support.debezium_events import WORKLOAD_EXPECTED, ChangeTopic, run_workload
from support.schedule_report import ScheduleReport


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the run's controller, or a run without xdist
        config.pluginmanager.register(ScheduleReport(), "schedule-report")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration_tests" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    """The local Kafka + Connect stack, brought up (idempotently) if it is not running."""
    st = Stack()
    statuses = st.up()
    bad = [s for s in statuses if s.state != "healthy"]
    if bad:
        pytest.fail(f"stack not healthy: {bad}")
    services.sweep_dead()  # what killed runs left running (made_ledger.py)
    yield st
    services.forget_made()


@pytest.fixture(scope="session")
def postgres() -> None:
    try:
        with services.pg_connect() as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # pragma: no cover - depends on the machine
        pytest.fail(f"PostgreSQL on 127.0.0.1:5432 is needed (scripts/provision-sources.sh): {exc}")


@pytest.fixture(scope="session")
def mariadb() -> None:
    try:
        conn = services.maria_connect()
        conn.close()
    except Exception as exc:  # pragma: no cover - depends on the machine
        pytest.fail(f"MariaDB on 127.0.0.1:3306 is needed (scripts/provision-sources.sh): {exc}")


@pytest.fixture(scope="session")
def postgres_changes(stack: Stack, postgres: None) -> Iterator[ChangeTopic]:
    """A PostgreSQL table captured by a real Debezium connector, after the workload."""
    table = services.unique("orders")
    with services.pg_connect() as conn:
        conn.execute(
            f"CREATE TABLE public.{table} (id int PRIMARY KEY, name text, amount numeric(10,2))"
        )
        conn.execute(f"INSERT INTO public.{table} VALUES (1, 'seed', 1.00)")
        with services.debezium_connector("postgresql", [f"public.{table}"]) as reg:
            topic = f"{reg.prefix}.public.{table}"
            assert len(services.consume(topic, 1)) == 1, "no snapshot event arrived"
            run_workload(conn.execute, f"public.{table}")
            records = services.consume(topic, len(WORKLOAD_EXPECTED))
            yield ChangeTopic(reg.name, topic, records)
        conn.execute(f"DROP TABLE public.{table}")


@pytest.fixture(scope="session")
def mariadb_changes(stack: Stack, mariadb: None) -> Iterator[ChangeTopic]:
    """A MariaDB table captured by a real Debezium connector, after the workload."""
    table = services.unique("orders")
    conn = services.maria_connect()
    try:
        with conn.cursor() as cur:
            cur.execute(
                f"CREATE TABLE {table} (id int PRIMARY KEY, name varchar(100), "
                "amount decimal(10,2))"
            )
            cur.execute(f"INSERT INTO {table} VALUES (1, 'seed', 1.00)")
            with services.debezium_connector(
                "mariadb", [f"{services.TEST_DATABASE}.{table}"]
            ) as reg:
                topic = f"{reg.prefix}.{services.TEST_DATABASE}.{table}"
                assert len(services.consume(topic, 1)) == 1, "no snapshot event arrived"
                run_workload(cur.execute, table)
                records = services.consume(topic, len(WORKLOAD_EXPECTED))
                yield ChangeTopic(reg.name, topic, records)
            cur.execute(f"DROP TABLE {table}")
    finally:
        conn.close()
