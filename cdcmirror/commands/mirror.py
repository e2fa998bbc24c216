"""``cdcmirror mirror``: find the mirrored tables in the catalog and run the streaming job."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from cdcmirror import dialects
from cdcmirror.checkpoint_store import CheckpointFiles, checkpoint_files, remembered_schemas
from cdcmirror.commands.job_tables import (
    cdc_tables,
    internal_namespace,
    refuse_half_loaded,
    refuse_uuids_without_converter,
)
from cdcmirror.commands.kafka_access import client_conf, require_login, spark_options
from cdcmirror.config import Config
from cdcmirror.exceptions import CdcMirrorError, ConfigError, ServiceUnavailableError
from cdcmirror.health.connector_watch import ConnectorWatch
from cdcmirror.mirror.evolution import Evolution
from cdcmirror.mirror.spec import MirrorTable, carriers_json, mirror_table
from cdcmirror.table_properties import CARRIERS_PROPERTY

if TYPE_CHECKING:
    from cdcmirror.commands.streams import JobStreams
    from cdcmirror.metrics import MirrorMetrics

logger = logging.getLogger(__name__)

SourceCheck = Callable[[], str | None]  # what is wrong with the source's settings, or None


class CatalogAccess:
    """The applier's catalog hooks, through pyiceberg."""

    def __init__(self, config: Config, catalog: Any) -> None:
        self.config = config
        self.catalog = catalog

    def reload(self, table: MirrorTable) -> MirrorTable:
        from cdcmirror.catalog.mirrored import read_table

        t = read_table(self.catalog, table.identifier)
        if t is None:
            return table
        spec = mirror_table(t.identifier, t.columns, t.key, t.properties, self.config.source.name)
        return spec or table

    def evolve(self, table: MirrorTable, evo: Evolution) -> MirrorTable:
        from cdcmirror.catalog.mirrored import evolve_table

        evolved = evo.evolved(table)
        add = [
            (c.name, c.iceberg, f"added by cdcmirror mirror from the events ({c.carrier})")
            for c in evo.add
        ]
        widen = [(name, new) for name, _, new in evo.widen]
        evolve_table(
            self.catalog,
            table.identifier,
            add=add,
            widen=widen,
            properties={CARRIERS_PROPERTY: carriers_json(evolved)},
        )
        if table.history is not None:  # its versions take the same columns
            evolve_table(self.catalog, table.history, add=add, widen=widen, properties={})
        return evolved


def build_applier(
    config: Config,
    catalog: Any,
    tables: list[MirrorTable],
    spark: Any,
    metrics: MirrorMetrics | None = None,
    streams: JobStreams | None = None,
    planned: Callable[[int], Any] | None = None,
    known: Any = None,
    files: CheckpointFiles | None = None,
) -> Any:
    """The applier of ``tables`` (and ``streams``) as the mirror job configures it;
    ``metrics`` counts its batches; ``planned`` gives a batch's offset ranges
    (``mirror/checkpoint.batch_ranges``); ``known``: the row schemas earlier runs applied
    (:func:`remembered_schemas`); ``files``: the checkpoint, where the consistent point's
    ledger is kept (``mirror.consistent_tag``)."""
    from cdcmirror.bootstrap.connector import connector_name
    from cdcmirror.clients.registry import SchemaRegistry
    from cdcmirror.commands.maintain import settings_of
    from cdcmirror.health.connector import connector_problem
    from cdcmirror.spark.cdc.batch import Applier, ApplierOptions, CatalogHooks
    from cdcmirror.spark.maintenance.job import JobMaintenance

    access = CatalogAccess(config, catalog)
    connector = connector_name(config.source.name)

    def source_health() -> str | None:
        return connector_problem(config.connect, connector)

    cdc_avro = config.kafka.avro
    stream_avro = any(s.format == "avro" for s in config.streams)
    # one client (and one cache of schemas by id) for the CDC topics and the streams
    url = config.kafka.schema_registry_url
    auth = config.kafka.registry_auth
    registry = SchemaRegistry(url, auth=auth) if cdc_avro or stream_avro else None
    options = ApplierOptions(
        schemas=config.kafka.with_schemas,
        soft_deletes=config.mirror.soft_deletes,
        fail_on_dead_letter=config.mirror.fail_on_dead_letter,
        internal_namespace=internal_namespace(config),
        parallelism=config.mirror.parallelism,
        maintenance=JobMaintenance(
            config.maintain.every_batches, settings_of(config), config.maintain.max_snapshots
        ),
        registry=registry if cdc_avro else None,
        stream_registry=registry if stream_avro else None,
        source_health=source_health,
        on_batch=metrics.batch_done if metrics else None,
        on_failure=metrics.batch_failed if metrics else None,
        batch_ranges=planned,
        known_schemas=known,
        read_ranges=ranges_reader(config),
        consistency=consistent_tag(config, tables, files, registry if cdc_avro else None),
        on_point=metrics.point_at if metrics else None,
    )
    hooks = CatalogHooks(
        access.reload,
        access.evolve,
        streams.access.evolve if streams else None,
        streams.access.reload if streams else None,
    )
    mine = {s.identifier: s for s in streams.tables} if streams else {}
    return Applier(spark, {t.topic: t for t in tables}, options, hooks, mine)


def consistent_tag(
    config: Config, tables: list[MirrorTable], files: CheckpointFiles | None, registry: Any
) -> Any:
    """The source's consistent tag (``spark/consistent.py``), when ``mirror.consistent_tag``
    names one and the job keeps a checkpoint; ``registry``: the Avro events' schemas."""
    tag = config.mirror.consistent_tag
    if not tag or files is None or not tables:
        return None
    from cdcmirror.checkpoint_store import ConsistentLedgers
    from cdcmirror.mirror.transaction_metadata import transaction_topic
    from cdcmirror.spark.consistent import ConsistentTag
    from cdcmirror.stack.health import records_from

    kafka = client_conf(config)
    return ConsistentTag(
        tag,
        config.source.dialect,
        config.kafka.with_schemas,
        transaction_topic(config.source.name),
        lambda topic, start: records_from(kafka, topic, start),
        ConsistentLedgers(files),
        tables,
        registry,
    )


def ranges_reader(config: Config) -> Callable[[Any, Any], Any]:
    """How the job reads a batch's records of given Kafka offset ranges."""
    from cdcmirror.spark.kafka import read_ranges

    kafka, per_task = spark_options(config), config.mirror.events_per_task
    group = f"cdcmirror-{config.source.name}-ranges"
    return lambda spark, ranges: read_ranges(spark, kafka, ranges, per_task, group)


def mirror(config: Config, available_now: bool = False, only: list[str] | None = None) -> None:
    from cdcmirror.catalog import load_catalog
    from cdcmirror.catalog.leases import acquire, my_lease, release
    from cdcmirror.commands.streams import job_streams
    from cdcmirror.spark.query import run_until_stopped, start_query
    from cdcmirror.spark.session import build_spark_session

    require_login(config)  # a refused login stops here, not in Spark's endless retries
    catalog = load_catalog(config)
    streams = job_streams(config, catalog, only)
    tables = cdc_tables(config, catalog, only, required=not streams.tables)
    refuse_half_loaded(tables)
    refuse_uuids_without_converter(config, tables)
    identifiers = [t.identifier for t in tables] + streams.identifiers
    logger.info("mirroring %d table(s): %s", len(identifiers), ", ".join(identifiers))
    files = checkpoint_files(config)  # a checkpoint URL Spark cannot write stops here
    checkpoint = files.location
    me = my_lease(checkpoint)
    acquire(catalog, identifiers, me)  # a second job on these tables stops here
    # until the query runs (its own handler then finishes the batch), SIGTERM ends the job
    # through `finally`, which gives the lease back
    previous = signal.signal(signal.SIGTERM, _exit_on_signal)
    server = None
    try:
        metrics, server = serve_metrics(config)
        spark = build_spark_session(config, "cdcmirror-mirror")
        starting = resume_offsets(config, catalog, tables, files, streams)
        planned = planned_by(files, starting)
        known = remembered_schemas(files)
        applier = build_applier(
            config, catalog, tables, spark, metrics, streams, planned, known, files
        )
        problem = applier.options.source_health()
        if problem:
            logger.error("%s; the mirror applies what Kafka holds and goes on", problem)
        query = start_query(
            spark,
            applier,
            spark_options(config),
            sorted(t.topic for t in tables),
            starting,
            checkpoint,
            config.mirror.trigger,
            available_now,
            config.mirror.max_events_per_batch,
            config.mirror.events_per_task,
            streams.patterns(),
        )
        with (
            LeaseRenewal(catalog, identifiers, me, query) as renewal,
            source_settings_check(config) as source_check,
            watch(config, source_check) as watching,
        ):
            watching.check_source()  # at start too, whether the watch runs or not
            run_until_stopped(query, applier.gate)
        renewal.raise_lost()
    finally:
        signal.signal(signal.SIGTERM, previous)
        release(catalog, identifiers, me)
        if server is not None:
            server.shutdown()
            server.server_close()


def planned_by(files: CheckpointFiles, starting: str) -> Callable[[int], Any]:
    """A batch's offset ranges from the checkpoint's offset log (``starting``: the query's
    starting offsets, batch 0's start)."""
    from cdcmirror.mirror.checkpoint import batch_ranges

    return lambda batch_id: batch_ranges(files, batch_id, starting)


def serve_metrics(config: Config) -> tuple[MirrorMetrics | None, Any]:
    """The job's metrics and their HTTP server, when ``mirror.metrics_port`` is set."""
    port = config.mirror.metrics_port
    if not port:
        return None, None
    from cdcmirror.metrics import MirrorMetrics

    host = config.mirror.metrics_host
    metrics = MirrorMetrics()
    try:
        server = metrics.serve(host, port)
    except OSError as exc:
        raise ConfigError(
            f"mirror.metrics_port: cannot serve metrics on {host}:{port} ({exc}); free the "
            "port or choose another (0: no metrics endpoint)"
        ) from exc
    logger.info("metrics on http://%s:%d/metrics", host, port)
    return metrics, server


def watch(config: Config, source_check: SourceCheck | None = None) -> ConnectorWatch:
    """The watch on the source's connector while the query runs (``connector_watch.py``)."""
    from cdcmirror.bootstrap.connector import connector_name

    return ConnectorWatch(
        config.connect,
        connector_name(config.source.name),
        float(config.mirror.connector_check_seconds),
        config.mirror.restart_failed_tasks,
        source_check,
    )


@contextmanager
def source_settings_check(config: Config) -> Iterator[SourceCheck | None]:
    """What the source loses before Kafka (MySQL/MariaDB binlog settings, the connector's
    place in the binlog history: ``health/binlog.py``), over one engine for the job."""
    if not dialects.of(config.source.dialect).binlog:
        yield None
        return
    from cdcmirror.bootstrap.connector import connector_name
    from cdcmirror.health.binlog import binlog_health
    from cdcmirror.source.connection import open_engine

    try:
        engine = open_engine(config.source)
    except CdcMirrorError as exc:  # the job needs Kafka, not the source: it goes on
        logger.warning("the source's binlog settings cannot be checked: %s", exc)
        yield None
        return
    try:
        name = connector_name(config.source.name)
        yield lambda: binlog_health(engine, config.connect, name)
    finally:
        engine.dispose()


def resume_offsets(
    config: Config,
    catalog: Any,
    tables: list[MirrorTable],
    checkpoint: CheckpointFiles,
    streams: JobStreams | None = None,
) -> str:
    """Spark's starting offsets: for a checkpoint without a batch (a new mirror, or its
    checkpoint was lost), the Kafka offsets the tables' snapshots record
    (``mirror/resume.py``; a stream's: ``stream_starts``; with the consistent tag, the
    offsets of the tagged snapshots), else the earliest; a checkpoint with batches resumes
    itself."""
    from cdcmirror.catalog.mirrored import snapshot_summaries
    from cdcmirror.mirror.checkpoint import holds_batches
    from cdcmirror.mirror.resume import recorded_starts, starting_offsets
    from cdcmirror.stack.health import committed_end_offsets

    if holds_batches(checkpoint):
        return "earliest"
    recorded: dict[str, dict[int, int]] = {}
    # with the consistent tag, from the batch of each table's snapshot at the point: the
    # changes after the point come again, so the ledger started from it can count them
    tag = config.mirror.consistent_tag or None
    for t in tables:
        starts = recorded_starts(snapshot_summaries(catalog, t.identifier, tag)).get(t.topic)
        if starts:
            recorded[t.topic] = starts
    topics = sorted(t.topic for t in tables)
    if streams is not None and streams.tables:
        recorded.update(streams.resume(catalog))
        topics += streams.topics(config)
    if not recorded:
        return "earliest"
    bootstrap = config.kafka.bootstrap_servers
    try:
        ends = committed_end_offsets(client_conf(config), topics)
    except Exception as exc:
        raise ServiceUnavailableError(
            f"Kafka at {bootstrap} does not answer ({exc}); start it (`cdcmirror stack up`) "
            "or fix kafka.bootstrap_servers"
        ) from exc
    text = starting_offsets({topic: list(parts) for topic, parts in ends.items()}, recorded)
    if text is None:
        return "earliest"
    logger.warning(
        "checkpoint %s holds no batch but %d table(s) were mirrored before: resuming from "
        "the Kafka offsets their snapshots record (the newest batch of each runs again, "
        "harmlessly), the other topics from the earliest offset",
        checkpoint.location,
        len(recorded),
    )
    return text


def _exit_on_signal(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


class LeaseRenewal:
    """Renews the job's lease on its tables while the query runs; a lease another job took
    stops the query (``raise_lost`` then says why)."""

    def __init__(self, catalog: Any, identifiers: list[str], me: Any, query: Any) -> None:
        self.catalog, self.identifiers, self.me, self.query = catalog, identifiers, me, query
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cdcmirror-lease", daemon=True)

    def __enter__(self) -> LeaseRenewal:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        from cdcmirror.catalog.leases import acquire
        from cdcmirror.mirror.lease import LEASE_SECONDS, RENEW_SECONDS

        while not self._stop.wait(RENEW_SECONDS):
            renewed = replace(self.me, until=time.time() + LEASE_SECONDS)
            try:
                acquire(self.catalog, self.identifiers, renewed)
            except CdcMirrorError as exc:
                self.lost = str(exc)
                logger.error("stopping: %s", exc)
                self.query.stop()
                return
            except Exception as exc:  # the catalog hiccuped: try again at the next round
                logger.warning("lease renewal failed, retrying: %s", exc)

    def raise_lost(self) -> None:
        if self.lost:
            raise ConfigError(self.lost)
