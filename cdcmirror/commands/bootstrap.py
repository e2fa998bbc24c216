"""Run a bootstrap: discover, map, check, then create or evolve tables and register the
connector. Every check that can fail runs before anything is written."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from cdcmirror import dialects
from cdcmirror.bootstrap import connector as conn_mod
from cdcmirror.bootstrap.desired import desired_tables
from cdcmirror.bootstrap.plan import (
    DesiredTable,
    TablePlan,
    carrier_drift,
    plan_table,
    with_history,
)
from cdcmirror.bootstrap.report import BootstrapResult, ConnectorResult
from cdcmirror.clients.connect import ConnectClient
from cdcmirror.commands.initial_load import (
    LoadContext,
    LoadDecision,
    LoadReport,
    load_by_spark,
    table_load,
)
from cdcmirror.commands.kafka_access import require_login
from cdcmirror.commands.streams import apply_stream_plans, plan_streams
from cdcmirror.config import Config
from cdcmirror.config.catalog import embedded_catalog_paths
from cdcmirror.config.masking import mask_url_password
from cdcmirror.connectors import masked, write_secret_file
from cdcmirror.exceptions import (
    ConnectorError,
    NotLoadableError,
)
from cdcmirror.load.plan import PENDING, SPARK, LoadChoice, choose, snapshot_mode
from cdcmirror.load.progress import TableProgress
from cdcmirror.source.connection import source_url
from cdcmirror.source.include import is_included
from cdcmirror.source_model import SourceCatalog
from cdcmirror.table_properties import CARRIERS_PROPERTY, HISTORY_PROPERTY, LOAD_PROPERTY

logger = logging.getLogger(__name__)


def _open_catalog(config: Config, dry_run: bool) -> Any | None:
    """The Iceberg catalog; None in a dry run whose embedded catalog does not exist yet (a dry
    run creates nothing, not even the catalog file)."""
    from cdcmirror.catalog import load_catalog

    if dry_run and not config.iceberg.catalog:
        db, _ = embedded_catalog_paths(config.state_dir)
        if not db.exists():
            return None
    return load_catalog(config)


def require_registry(config: Config) -> str:
    """The schema registry URL, once it answers (Avro connectors register schemas there)."""
    from cdcmirror.exceptions import ServiceUnavailableError
    from cdcmirror.stack.health import registry_answers

    url = config.kafka.schema_registry_url
    if not registry_answers(url, timeout=5.0, auth=config.kafka.registry_auth):
        raise ServiceUnavailableError(
            f"the schema registry at {mask_url_password(url)} does not answer "
            '(kafka.format = "avro" needs it); start it (`cdcmirror stack up` runs one) or fix '
            "kafka.schema_registry_url"
        )
    return url


def bootstrap(
    config: Config,
    *,
    dry_run: bool = False,
    register_connector: bool = True,
    on_table: Callable[[str], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_step: Callable[[str], None] | None = None,
    wait_timeout: float = 120.0,
    initial_load: str | None = None,
    on_progress: Callable[[TableProgress], None] | None = None,
) -> BootstrapResult:
    """Discover the included tables, create or evolve their Iceberg tables, load their rows
    (``initial_load``, default ``[bootstrap] initial_load``), register the connector.
    ``dry_run`` computes and validates everything and writes nothing."""
    from cdcmirror.source.discovery import discover

    require_login(config)  # the connector's history and the stream samples log in too
    run = _Steps(on_step)
    run.step("discovering source tables")
    catalog_src = run.timed("discover", lambda: discover(config.source, require_safe_source=True))
    desired = [_with_history(config, d)[0] for d in desired_tables(config, catalog_src)]
    run.step(f"{len(desired)} tables mapped")
    work: _ConnectorWork | None = None
    if register_connector:
        work = run.timed(
            "validate connector",
            lambda: _plan_connector(config, catalog_src, desired, initial_load, dry_run, run),
        )
    iceberg = _open_catalog(config, dry_run)
    schemaless = not (config.kafka.with_schemas or config.kafka.avro)
    plans, pending = run.timed(
        "plan tables", lambda: _plan_tables(config, iceberg, desired, schemaless)
    )
    streams = run.timed("plan streams", lambda: plan_streams(config, iceberg))
    if not dry_run:
        run.timed("apply tables", lambda: _apply_tables(config, iceberg, plans, on_start, on_table))
        run.timed("apply streams", lambda: apply_stream_plans(config, iceberg, streams))
    result_c: ConnectorResult | None = None
    report: LoadReport | None = None
    if work is not None:
        w = work

        def register() -> ConnectorResult:
            if not dry_run:
                run.step(f"registering connector {w.plan.name}")
            return _register(w.client, w.plan, w.secret_path, dry_run, wait_timeout)

        if dry_run or (w.load.mode != SPARK and not pending):
            result_c = run.timed("register connector", register)
        else:
            todo = desired if w.load.mode == SPARK else pending
            run.step(f"loading {len(todo)} table(s) through Spark")
            ctx = _load_context(config, iceberg, catalog_src.dialect, w.load, on_progress)
            report, result_c = run.timed(
                "load and register connector",
                lambda: load_by_spark(ctx, todo, register, w.plan.name, w.load.mode == SPARK),
            )
    run.timings["total"] = time.monotonic() - run.started
    choice = work.load.choice if work is not None else None
    return BootstrapResult(
        catalog_src, plans, result_c, dry_run, run.timings, report, streams, choice
    )


T = TypeVar("T")


class _Steps:
    """Bootstrap's progress lines and the seconds of each step."""

    def __init__(self, on_step: Callable[[str], None] | None) -> None:
        self.on_step = on_step
        self.timings: dict[str, float] = {}
        self.started = time.monotonic()

    def step(self, message: str) -> None:
        logger.info("%s", message)
        if self.on_step:
            self.on_step(message)

    def timed(self, name: str, fn: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            return fn()
        finally:
            self.timings[name] = time.monotonic() - started


@dataclass(frozen=True)
class _ConnectorWork:
    client: ConnectClient
    plan: conn_mod.ConnectorPlan
    load: LoadDecision
    secret_path: Path


def _plan_connector(
    config: Config,
    catalog_src: SourceCatalog,
    desired: list[DesiredTable],
    initial_load: str | None,
    dry_run: bool,
    run: _Steps,
) -> _ConnectorWork:
    """The connector's config (with the initial load's snapshot settings), validated by
    Connect before anything is written."""
    secret_path = conn_mod.secret_file(config, config.source.name)
    client = ConnectClient.of(config.connect)
    plan = conn_mod.plan_connector(config, catalog_src, secret_path, source_url(config.source))
    load = _decide_load(config, client, plan, catalog_src, desired, initial_load)
    run.step(load.choice.describe())
    if config.kafka.avro:
        require_registry(config)
    _validate(client, load.connector, config, secret_path, dry_run)
    return _ConnectorWork(client, load.connector, load, secret_path)


def _plan_tables(
    config: Config, iceberg: Any, desired: list[DesiredTable], schemaless: bool
) -> tuple[list[TablePlan], list[DesiredTable]]:
    """What to create or change per table (and per history table, ``mirror.history``), and
    the tables an interrupted load left without their rows. ``schemaless``: the events carry
    no schema, so a column's change of encoding is drift, and its recorded carrier stays."""
    from cdcmirror.catalog.tables import read_existing

    plans, pending = [], []
    for d in desired:
        existing = read_existing(iceberg, d.identifier) if iceberg is not None else None
        plan = plan_table(d, existing)
        if schemaless and (changed := carrier_drift(d, existing)):
            plan.drift += changed
            plan.set_properties.pop(CARRIERS_PROPERTY, None)
            if plan.action == "alter" and not (
                plan.add or plan.widen or plan.relax or plan.set_properties
            ):
                plan.action = "unchanged"
        plans.append(plan)
        if (history := _with_history(config, d)[1]) is not None:
            kept = read_existing(iceberg, history.identifier) if iceberg is not None else None
            plans.append(plan_table(history, kept))
        elif existing is not None and existing.properties.get(HISTORY_PROPERTY):
            # left out of mirror.history: the job stops writing the history table, kept
            plan.set_properties[HISTORY_PROPERTY] = ""
            plan.action = "alter"
        if existing is not None and existing.properties.get(LOAD_PROPERTY) == PENDING:
            pending.append(d)
    return plans, pending


def _with_history(config: Config, d: DesiredTable) -> tuple[DesiredTable, DesiredTable | None]:
    """A table ``mirror.history`` selects, naming its history table, and that table; any
    other table as it is, and None."""
    if not is_included(d.source.qualified, list(config.mirror.history)):
        return d, None
    return with_history(d, config.mirror.history_suffix)


def _decide_load(
    config: Config,
    client: ConnectClient,
    plan: conn_mod.ConnectorPlan,
    catalog_src: SourceCatalog,
    desired: list[DesiredTable],
    override: str | None,
) -> LoadDecision:
    """Spark or Debezium for the rows: only a connector registered now takes an initial
    load; a registered one keeps the snapshot settings it runs with. ``auto`` falls back to
    Debezium when a column cannot be loaded by Spark; an explicit ``spark`` stops (exit 2)."""
    from dataclasses import replace

    if plan.name in client.names():
        current = client.config(plan.name)
        kept = conn_mod.keep_snapshot_settings(current, plan.config)
        unknown = conn_mod.tables_without_history(current, kept)
        if unknown:
            raise ConnectorError(
                f"connector {plan.name!r} keeps only its captured tables' DDL in its schema "
                f"history (registered by an earlier cdcmirror), so it cannot start capturing "
                f"{', '.join(unknown)}: it would fail at their first change. Nothing was "
                "changed. Either leave them out of source.include for now, or mirror the "
                "source afresh: stop the mirror job, `cdcmirror teardown --yes --topics "
                "--checkpoint --tables`, then `cdcmirror bootstrap` (connectors registered "
                "now keep every table's DDL, so tables added later join without this)"
            )
        asked = override or config.bootstrap.initial_load
        existing = LoadChoice("existing", asked, 0, config.bootstrap.initial_load_min_rows)
        return LoadDecision(existing, replace(plan, config=kept), None)
    from cdcmirror.source.connection import open_engine
    from cdcmirror.source.load_reads import estimated_rows

    engine = open_engine(config.source)
    estimates = estimated_rows(
        engine, catalog_src.dialect, [t.qualified for t in catalog_src.tables]
    )
    total = sum(estimates.values())
    asked = override or config.bootstrap.initial_load
    mode = choose(asked, total, config.bootstrap.initial_load_min_rows)
    why = ""
    if mode == SPARK:
        try:
            for d in desired:
                table_load(catalog_src.dialect, d)
        except NotLoadableError as exc:
            if asked == SPARK:
                raise
            mode, why = "debezium", f"; Spark cannot load {exc}"
    connector = replace(plan, config={**plan.config, **snapshot_mode(mode)})
    choice = LoadChoice(
        mode,
        asked,
        total,
        config.bootstrap.initial_load_min_rows,
        tuple(sorted(estimates.items())),
        dialects.of(catalog_src.dialect).row_estimate,
        why,
    )
    return LoadDecision(choice, connector, engine)


def _load_context(
    config: Config,
    iceberg: Any,
    dialect: str,
    load: LoadDecision,
    on_progress: Callable[[TableProgress], None] | None,
) -> LoadContext:
    from cdcmirror.source.connection import open_engine

    return LoadContext(
        config=config,
        engine=load.engine or open_engine(config.source),
        url=source_url(config.source),
        iceberg=iceberg,
        dialect=dialect,
        estimates=load.estimates,
        on_progress=on_progress or (lambda p: logger.info("%s", p.text())),
    )


def _apply_tables(
    config: Config,
    iceberg: Any,
    plans: list[TablePlan],
    on_start: Callable[[int], None] | None,
    on_table: Callable[[str], None] | None,
) -> None:
    """Create or evolve each Iceberg table as planned."""
    from cdcmirror.catalog.tables import apply_plan, ensure_namespace

    if on_start:
        on_start(len(plans))
    if any(p.action == "create" for p in plans):
        ensure_namespace(iceberg, config.iceberg.namespace)
    version = config.iceberg.format_version
    for p in plans:
        apply_plan(iceberg, p, version)
        if on_table:
            on_table(p.desired.identifier)


def _validate(
    client: ConnectClient,
    plan: conn_mod.ConnectorPlan,
    config: Config,
    secret_path: Path,
    dry_run: bool,
) -> None:
    """Connect's validate endpoint on the config, before anything is written. A dry run
    validates with a temporary secret file beside the real one (the directory Connect's file
    provider may read), so the real one is not written."""
    if config.connect.secrets != "file":
        errors = client.validate({**plan.config, "name": plan.name})
    elif dry_run:
        tmp_secret = secret_path.with_name(f".validate-{uuid.uuid4().hex}.properties")
        try:
            write_secret_file(tmp_secret, *plan.secrets)
            cfg = {k: v.replace(str(secret_path), str(tmp_secret)) for k, v in plan.config.items()}
            errors = client.validate({**cfg, "name": plan.name})
        finally:
            tmp_secret.unlink(missing_ok=True)
    else:
        write_secret_file(secret_path, *plan.secrets)
        errors = client.validate({**plan.config, "name": plan.name})
    if errors:
        raise ConnectorError(
            f"Kafka Connect rejects the config of connector {plan.name!r}:\n  "
            + "\n  ".join(errors)
        )


def _register(
    client: ConnectClient,
    plan: conn_mod.ConnectorPlan,
    secret_path: Path,
    dry_run: bool,
    wait_timeout: float,
) -> ConnectorResult:
    current = client.config(plan.name) if plan.name in client.names() else None
    if conn_mod.same_config(current, plan.config, plan.name):
        action = "unchanged"
    else:
        action = "create" if current is None else "update"
    added = conn_mod.added_tables(current, plan.config) if current is not None else []
    result = ConnectorResult(plan.name, action, masked(plan.config), added=added)
    if dry_run:
        return result
    failed = current is not None and client.failed(plan.name)
    if action != "unchanged":
        if added:
            # the added tables' rows are read after bootstrap (`repair --method reload`),
            # and every change after that read must reach the stream: a task still on the
            # old config would read past such a change without capturing it, and the new
            # task starts from its offset. Stopped, no old task runs when the new one starts.
            client.stop(plan.name)
        try:
            client.put(plan.name, plan.config, validate=False)
        finally:  # a config Connect refused leaves the old one running again
            if added:
                client.resume(plan.name)
        logger.info("%sd connector %s", action, plan.name)
    if failed:
        client.restart_failed(plan.name)
        logger.info("connector %s had FAILED: restarted what FAILED", plan.name)
    status = client.wait_running(plan.name, timeout=wait_timeout, restarted=failed)
    result.state = status["connector"]["state"]
    return result
