"""Bootstrap's initial load by Spark: fix the stream's start, read every table over JDBC in
parallel, write it to Iceberg, then let the connector stream from that start.

The order, per dialect (why it is exact: ``load/plan.py``):

- PostgreSQL: create the connector's replication slot with an exported snapshot, load every
  table inside that snapshot, close the slot's connection, register the connector
  (``snapshot.mode = no_data``: it streams from the slot's start).
- MySQL/MariaDB: register the connector (``no_data``, heartbeats), wait for its first
  committed binlog offset (from then on every change is streamed), load every table.

While it loads, the tables carry a mirror lease (``catalog/leases.py``): a mirror job
started meanwhile refuses to run instead of applying changes to a half-loaded table. Each
table is ``pending`` (table property) until its rows are committed, so a bootstrap run
again after an interrupted MySQL/MariaDB load loads what is left.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from cdcmirror import dialects
from cdcmirror.bootstrap.plan import DesiredTable
from cdcmirror.config import Config
from cdcmirror.exceptions import ConfigError, ConnectorError
from cdcmirror.load.partitions import (
    block_ranges,
    integer_ranges,
    partition_count,
    point_ranges,
)
from cdcmirror.load.plan import (
    PENDING,
    LoadChoice,
    TableLoad,
    check_keyed,
    load_columns,
    summary,
)
from cdcmirror.load.progress import TableProgress
from cdcmirror.mirror.high_water import loaded
from cdcmirror.mirror.positions import (
    binlog_file_index,
    loaded_position,
    observed_position,
    source_length,
)
from cdcmirror.table_properties import LOAD_PROPERTY

logger = logging.getLogger(__name__)

INTEGER_TYPES = ("tinyint", "smallint", "mediumint", "int", "integer", "bigint")
LEASE_HOLDER = "initial load of cdcmirror bootstrap"
OFFSET_WAIT_SECONDS = 120.0


@dataclass
class LoadedTable:
    identifier: str
    rows: int
    bad: int
    example: str | None
    seconds: float
    reads: int
    kept_deleted: int = 0  # rows only the mirror had, kept as deleted (a soft re-load)


@dataclass
class LoadReport:
    mode: str  # "spark" or "debezium"
    estimated_rows: int
    start: str = ""  # the stream's fixed start, as the source names it
    tables: list[LoadedTable] = field(default_factory=list)

    @property
    def bad_rows(self) -> int:
        return sum(t.bad for t in self.tables)


@dataclass(frozen=True)
class LoadDecision:
    """How bootstrap gets the rows: ``mode`` spark or debezium for a new connector,
    ``existing`` when the connector is registered already (only tables an interrupted
    load left are loaded then)."""

    choice: LoadChoice
    connector: Any  # the connector plan, with the snapshot settings of the mode
    engine: Any  # the source (SQLAlchemy), opened for the estimates

    @property
    def mode(self) -> str:
        return self.choice.mode

    @property
    def estimates(self) -> dict[str, int]:
        """Source table -> estimated rows."""
        return dict(self.choice.estimates)


@dataclass(frozen=True)
class LoadContext:
    """What loading needs, resolved by the bootstrap command."""

    config: Config
    engine: Any  # the source (SQLAlchemy)
    url: Any  # the source's SQLAlchemy URL (password included)
    iceberg: Any  # the Iceberg catalog (pyiceberg)
    dialect: str
    estimates: dict[str, int]  # source table -> estimated rows
    on_progress: Callable[[TableProgress], None]
    keep_deleted: bool = False  # rows the load does not have stay, as deleted (a soft re-load)


def load_by_spark(
    ctx: LoadContext,
    tables: list[DesiredTable],
    register: Callable[[], Any],
    connector: str,
    new_connector: bool,
) -> tuple[LoadReport, Any]:
    """Load ``tables`` by Spark in the order above; ``register`` registers the connector
    and returns its result (also returned). With the connector registered already
    (``new_connector`` false) only MySQL/MariaDB can load: its stream's start is known."""
    from cdcmirror.catalog.leases import my_lease

    if not new_connector and dialects.of(ctx.dialect).slot:
        names = ", ".join(d.identifier for d in tables)
        raise ConfigError(
            f"{names}: an initial load was interrupted after connector {connector} was "
            "registered, so no snapshot matches its slot any more. Load again from the start: "
            "`cdcmirror teardown --yes --topics --tables`, then `cdcmirror bootstrap`"
        )
    report = LoadReport("spark", sum(ctx.estimates.values()))
    loads = [table_load(ctx.dialect, d) for d in tables]  # refuses what it cannot load
    _mark_pending(ctx.iceberg, [d.identifier for d in tables])
    lease = my_lease(LEASE_HOLDER)
    with Leased(ctx.iceberg, [d.identifier for d in tables], lease):
        if dialects.of(ctx.dialect).slot:  # the load creates the slot and reads its snapshot
            result = _load_postgresql(ctx, loads, report, register, connector)
        else:
            result = register()
            _load_mysql(ctx, loads, report, connector)
    return report, result


def table_load(dialect: str, d: DesiredTable) -> TableLoad:
    """How the table is read; raises ``NotLoadableError`` naming a column Spark cannot load,
    or a table (``plan.check_keyed``)."""
    check_keyed(dialect, d.source.qualified, d.key)
    columns = [d.source.column(m.source) for m in d.mappings]
    mapped = [(m.iceberg_type, m.carrier) for m in d.mappings]
    return TableLoad(
        d.identifier,
        d.source.qualified,
        dialect,
        d.key,
        load_columns(dialect, d.source.qualified, columns, mapped),
        tuple((k, d.source.column(k).type.name) for k in d.key),
    )


def _load_postgresql(
    ctx: LoadContext,
    loads: list[TableLoad],
    report: LoadReport,
    register: Callable[[], Any],
    connector: str,
) -> Any:
    from cdcmirror.bootstrap.connector import slot_name
    from cdcmirror.source.load_reads import exported_slot
    from cdcmirror.source.slots import drop_slot

    slot = slot_name(ctx.config.source.name)
    if drop_slot(ctx.engine, slot, wait_seconds=30):  # its connector is gone: a leftover
        logger.warning("dropped replication slot %s left by an earlier bootstrap", slot)
    with exported_slot(ctx.url, slot) as snap:
        report.start = f"replication slot {slot} at LSN {snap.lsn:X}"
        init = snapshot_session_init(snap.name)
        position = loaded_position("postgresql", (snap.lsn,))
        # one snapshot for every table: their reads end where they began
        load_all(ctx, loads, report, init, position, snap.taken_us, lambda: (snap.lsn,))
    logger.info("registering connector %s (it streams from slot %s)", connector, slot)
    return register()


def snapshot_session_init(snapshot: str) -> str:
    """PostgreSQL: what each JDBC read runs first to read inside the exported ``snapshot``."""
    return (
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
        f"SET TRANSACTION SNAPSHOT '{snapshot}'; {dialects.of('postgresql').session_init}"
    )


def _load_mysql(
    ctx: LoadContext, loads: list[TableLoad], report: LoadReport, connector: str
) -> None:
    from cdcmirror.clients.connect import ConnectClient
    from cdcmirror.health.binlog import connector_position

    client = ConnectClient.of(ctx.config.connect)
    deadline = time.monotonic() + OFFSET_WAIT_SECONDS
    while (start := connector_position(client, connector)) is None:
        if time.monotonic() > deadline:
            raise ConnectorError(
                f"connector {connector} committed no binlog offset within "
                f"{OFFSET_WAIT_SECONDS:.0f}s, so the start of its stream is not known and "
                "nothing was loaded; look at its status (`cdcmirror check`) and the Connect "
                "log, then run bootstrap again"
            )
        time.sleep(1.0)
    at = binlog_now(ctx)
    report.start = f"connector {connector} streaming from {start[0]}:{start[1]}"
    position = loaded_position("mysql", at)
    init = dialects.of("mysql").session_init
    load_all(ctx, loads, report, init, position, int(time.time() * 1e6), lambda: binlog_now(ctx))


def binlog_now(ctx: LoadContext) -> tuple[int, int]:
    """MySQL/MariaDB: the binlog's end now (file index, offset), as ``loaded_position``
    takes it."""
    from cdcmirror.source.load_reads import binlog_position

    file, pos, _ = binlog_position(ctx.engine)
    return binlog_file_index(file), pos


def load_all(
    ctx: LoadContext,
    loads: list[TableLoad],
    report: LoadReport,
    session_init: str,
    position: list[int],
    source_ts_us: int,
    log_now: Callable[[], tuple[int, ...]],
) -> None:
    """Read and write each of ``loads``; ``log_now``: the source log's position once a
    table's reads are done (as ``loaded_position`` takes it), recorded with the load
    (``plan.read_through``): the rows may hold any change before it."""
    from cdcmirror.spark.load.initial_load import (
        JdbcSource,
        ProgressWatch,
        read_converted,
        write_loaded,
    )
    from cdcmirror.spark.session import build_spark_session

    spark = build_spark_session(ctx.config, "cdcmirror-initial-load")
    source = JdbcSource(*_jdbc(ctx), ctx.url.username or "", ctx.url.password or "", session_init)
    parallelism = int(spark.sparkContext.defaultParallelism)
    for load in loads:
        estimate = ctx.estimates.get(load.source, 0)
        where = _partitions(ctx, load, estimate, parallelism)
        frame = read_converted(spark, source, load, where, position, source_ts_us)
        group = f"cdcmirror-load-{load.identifier}"
        with ProgressWatch(spark, group, load.identifier, estimate, ctx.on_progress):
            done = write_loaded(
                spark, frame, load, summary(position, source_ts_us, 0), group, ctx.keep_deleted,
                loaded(position, source_length(ctx.dialect)),
            )  # fmt: skip
        ctx.on_progress(
            TableProgress(load.identifier, estimate, len(where), len(where), done.seconds,
                          rows=done.rows)
        )  # fmt: skip
        through = observed_position(ctx.dialect, log_now())[: source_length(ctx.dialect)]
        record = summary(position, source_ts_us, done.rows, through)
        _set_loaded(ctx.iceberg, load.identifier, record)
        report.tables.append(
            LoadedTable(load.identifier, done.rows, done.bad, done.example, done.seconds,
                        len(where), done.kept_deleted)
        )  # fmt: skip


def _jdbc(ctx: LoadContext) -> tuple[str, str]:
    url, d = ctx.url, dialects.of(ctx.dialect)
    return d.jdbc_url(url.host or "127.0.0.1", url.port or d.default_port, url.database), (
        d.jdbc_driver
    )


def _partitions(ctx: LoadContext, load: TableLoad, estimate: int, parallelism: int) -> list[str]:
    from cdcmirror.source.load_reads import mysql_bounds, mysql_split_points, pg_pages

    rows_per_part = ctx.config.bootstrap.rows_per_partition
    parts = partition_count(estimate, rows_per_part, parallelism)
    d = dialects.of(ctx.dialect)
    if d.row_address:
        return block_ranges(pg_pages(ctx.engine, load.source), parts)
    if not load.key or parts <= 1:
        return ["1 = 1"]
    first = load.key[0]
    column = d.quote(first)
    kind = _source_type_name(load, first)
    if kind in INTEGER_TYPES:
        low, high = mysql_bounds(ctx.engine, load.source, first)
        return integer_ranges(column, low, high, parts)
    every = max(1, estimate // parts)
    return point_ranges(column, mysql_split_points(ctx.engine, load.source, first, every))


def _source_type_name(load: TableLoad, column: str) -> str:
    return dict(load.key_types).get(column, "")


def _mark_pending(iceberg: Any, identifiers: list[str]) -> None:
    from cdcmirror.catalog.mirrored import set_properties

    for identifier in identifiers:
        set_properties(iceberg, identifier, {LOAD_PROPERTY: PENDING})


def _set_loaded(iceberg: Any, identifier: str, text: str) -> None:
    from cdcmirror.catalog.mirrored import set_properties

    set_properties(iceberg, identifier, {LOAD_PROPERTY: text})


class Leased:
    """The mirror lease on the tables while they load, renewed every minute."""

    def __init__(self, iceberg: Any, identifiers: list[str], lease: Any) -> None:
        self.iceberg, self.identifiers, self.lease = iceberg, identifiers, lease
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="load lease", daemon=True)

    def __enter__(self) -> Leased:
        from cdcmirror.catalog.leases import acquire

        acquire(self.iceberg, self.identifiers, self.lease)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        from cdcmirror.catalog.leases import release

        self._stop.set()
        self._thread.join(timeout=30)
        release(self.iceberg, self.identifiers, self.lease)

    def _renew(self) -> None:
        from cdcmirror.catalog.leases import acquire
        from cdcmirror.mirror.lease import LEASE_SECONDS, RENEW_SECONDS

        while not self._stop.wait(RENEW_SECONDS):
            self.lease = replace(self.lease, until=time.time() + LEASE_SECONDS)
            try:
                acquire(self.iceberg, self.identifiers, self.lease)
            except Exception as exc:  # the load goes on; a mirror must still wait for it
                logger.warning("renewing the load's lease failed: %s", exc)
