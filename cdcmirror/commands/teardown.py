"""``cdcmirror teardown``: gather what exists, plan (``plan.py``), remove step by step."""

from __future__ import annotations

import logging
from collections.abc import Callable

from cdcmirror import dialects
from cdcmirror.bootstrap.teardown import Step, TeardownFacts
from cdcmirror.commands.kafka_access import client_conf
from cdcmirror.config import Config
from cdcmirror.exceptions import CdcMirrorError

logger = logging.getLogger(__name__)


def gather(config: Config) -> TeardownFacts:
    from cdcmirror.bootstrap.connector import connector_name, slot_name
    from cdcmirror.catalog import load_catalog
    from cdcmirror.checkpoint_store import checkpoint_files
    from cdcmirror.clients.connect import ConnectClient
    from cdcmirror.commands.job_tables import internal_namespace
    from cdcmirror.source.connection import open_engine
    from cdcmirror.source.discovery import signal_table_name
    from cdcmirror.source.signal import existing_signal_table
    from cdcmirror.source.slots import cdcmirror_slots
    from cdcmirror.stack.health import topics_named

    name = config.source.name
    connector = connector_name(name)
    registered = connector in ConnectClient.of(config.connect).names()
    engine = open_engine(config.source)
    try:
        slot = None
        signal = None
        if dialects.of(config.source.dialect).slot:
            wanted = slot_name(name)
            slot = next((s.name for s in cdcmirror_slots(engine) if s.name == wanted), None)
        signal = existing_signal_table(
            engine, signal_table_name(config.source, engine.url.database)
        )
    finally:
        engine.dispose()
    topics = topics_named(client_conf(config), f"{name}.", connector_topics(name))
    checkpoint = checkpoint_files(config)
    catalog = load_catalog(config)
    namespaces = [config.iceberg.namespace, internal_namespace(config)]
    existing = {".".join(n) for n in catalog.list_namespaces()}
    return TeardownFacts(
        connector=connector if registered else None,
        slot=slot,
        signal_table=signal,
        topics=tuple(topics),
        checkpoint=checkpoint.location if checkpoint.exists() else None,
        namespaces=tuple(n for n in namespaces if n in existing),
    )


def connector_topics(name: str) -> list[str]:
    """The topics the connector of source ``name`` writes beside its ``<name>.`` ones: the
    schema history (MySQL/MariaDB) and the heartbeats (bootstrap turns them on for a Spark
    initial load; Debezium names the topic ``__debezium-heartbeat.<topic prefix>``).

    >>> connector_topics("shop")
    ['_cdcmirror_schema_history.shop', '__debezium-heartbeat.shop']
    """
    return [f"_cdcmirror_schema_history.{name}", f"__debezium-heartbeat.{name}"]


def execute(
    config: Config, steps: list[Step], progress: Callable[[str], None]
) -> list[tuple[Step, str]]:
    """Run the steps; each that could not be done is returned with why."""
    left: list[tuple[Step, str]] = []
    for step in steps:
        progress(f"removing {step.kind} {step.target}")
        try:
            _run(config, step)
        except CdcMirrorError as exc:
            left.append((step, str(exc)))
        except Exception as exc:  # a library's error: report it with the step, go on
            left.append((step, f"{type(exc).__name__}: {exc}"))
    return left


def _run(config: Config, step: Step) -> None:
    if step.kind == "connector":
        from cdcmirror.clients.connect import ConnectClient

        client = ConnectClient.of(config.connect)
        # Kafka Connect keeps a deleted connector's offsets, and a connector registered again
        # under the name would resume from them instead of taking a new snapshot
        client.stop(step.target)
        client.reset_offsets(step.target)
        client.delete(step.target)
    elif step.kind in ("slot", "signal"):
        _run_source(config, step)
    elif step.kind == "topic":
        from cdcmirror.stack.health import delete_topics

        delete_topics(client_conf(config), [step.target])
    elif step.kind == "checkpoint":
        from cdcmirror.checkpoint_store import checkpoint_files

        checkpoint_files(config).remove()
    elif step.kind == "tables":
        from cdcmirror.catalog import load_catalog
        from cdcmirror.catalog.mirrored import drop_namespace_tables

        drop_namespace_tables(load_catalog(config), step.target)


def _run_source(config: Config, step: Step) -> None:
    from cdcmirror.source.connection import open_engine
    from cdcmirror.source.signal import empty_signal_table
    from cdcmirror.source.slots import drop_slot

    engine = open_engine(config.source)
    try:
        if step.kind == "slot":
            drop_slot(engine, step.target)
        else:
            empty_signal_table(engine, step.target)
    finally:
        engine.dispose()
