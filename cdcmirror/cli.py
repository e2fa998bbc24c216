"""The `cdcmirror` command line. Only this module configures logging handlers."""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cdcmirror.exceptions import EXIT_DRIFT, CdcMirrorError

F = TypeVar("F", bound=Callable[..., Any])
logger = logging.getLogger("cdcmirror")


def handle_errors(func: F) -> F:
    """Turn cdcmirror's own errors into one clean message and the documented exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CdcMirrorError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


def _say(message: str) -> None:
    click.echo(message, err=True)


@click.group()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Config file (default ./cdcmirror.toml if present, else local defaults).",
)
@click.option(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--log-level",
    envvar="CDCMIRROR_LOG_LEVEL",
    default="WARNING",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
)
@click.version_option(package_name="cdcmirror")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, output: str, log_level: str) -> None:
    """cdcmirror: mirror MySQL/MariaDB and PostgreSQL into Apache Iceberg."""
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    ctx.obj = {"config_path": config_path, "output": output}


@cli.group()
def stack() -> None:
    """The local Kafka (KRaft) + Kafka Connect (Debezium) stack, on loopback, without Docker."""


def _print_status(ctx: click.Context, statuses: list[Any]) -> None:
    if ctx.obj["output"] == "json":
        click.echo(json.dumps([s.as_dict() for s in statuses], indent=2))
        return
    width = max(len(s.name) for s in statuses)
    click.echo(f"{'part':<{width}} {'state':<10} {'address':<24} {'pid':<8} log")
    for s in statuses:
        click.echo(f"{s.name:<{width}} {s.state:<10} {s.address:<24} {s.pid or '-':<8} {s.log}")


@stack.command("up")
@click.option(
    "--cluster",
    is_flag=True,
    help="Also the cluster profile: an S3 store (http://127.0.0.1:7070), an Iceberg REST "
    "catalog (http://127.0.0.1:8181), a Spark standalone master (spark://127.0.0.1:7077) "
    "and two workers.",
)
@click.pass_context
@handle_errors
def stack_up(ctx: click.Context, cluster: bool) -> None:
    """Start the broker, the registry and the Connect worker (idempotent); return when all
    are healthy."""
    from cdcmirror.stack.control import Stack

    _print_status(ctx, Stack().up(progress=_say, with_cluster=cluster))


@stack.command("down")
@handle_errors
def stack_down() -> None:
    """Stop the processes `stack up` started."""
    from cdcmirror.stack.control import Stack

    Stack().down(progress=_say)


@stack.command("status")
@click.pass_context
@handle_errors
def stack_status(ctx: click.Context) -> None:
    """Show each part, its address and pid; exit 1 unless every part is healthy."""
    from cdcmirror.stack.control import Stack

    statuses = Stack().status()
    _print_status(ctx, statuses)
    if any(s.state != "healthy" for s in statuses):
        sys.exit(EXIT_DRIFT)


@cli.group()
def jars() -> None:
    """The pinned JVM jars (cdcmirror/jvm/manifest.toml) and their cache."""


@jars.command("resolve")
@click.argument("groups", nargs=-1)
@click.pass_context
@handle_errors
def jars_resolve(ctx: click.Context, groups: tuple[str, ...]) -> None:
    """Download the jar groups (all by default) from Maven Central unless already cached."""
    from cdcmirror.jvm.resolve import resolve_all

    result = resolve_all(names=groups or None, progress=_say)
    if ctx.obj["output"] == "json":
        click.echo(json.dumps({k: str(v) for k, v in result.items()}, indent=2))
    else:
        for name, path in result.items():
            click.echo(f"{name:<20} {path}")


@jars.command("submit")
@click.pass_context
@handle_errors
def jars_submit(ctx: click.Context) -> None:
    """The spark-submit arguments that run cdcmirror: --jars (the pinned Spark jars,
    downloaded first if needed) and the Python entry point, for
    `spark-submit --master URL $(cdcmirror jars submit) --config cdcmirror.toml mirror`."""
    from cdcmirror.config import load_config
    from cdcmirror.jvm.resolve import resolve_all
    from cdcmirror.spark.session import spark_jars

    entry = str(Path(__file__).with_name("submit.py"))  # not imported: it is a script
    resolve_all(names=["spark"], progress=_say)
    paths = spark_jars(load_config(ctx.obj["config_path"]))
    if ctx.obj["output"] == "json":
        click.echo(json.dumps({"jars": paths, "entry": entry}, indent=2))
    else:
        click.echo(f"--jars {','.join(paths)} {entry}")


@cli.command("check")
@click.pass_context
@handle_errors
def check(ctx: click.Context) -> None:
    """Check that the configured Kafka, Kafka Connect (and, for Avro, the schema registry)
    answer; exit 2 when one does not."""
    from cdcmirror.config import load_config
    from cdcmirror.exceptions import ServiceUnavailableError
    from cdcmirror.stack import health

    config = load_config(ctx.obj["config_path"])
    kafka = str(config.get("kafka", "bootstrap_servers"))
    connect = str(config.get("connect", "url"))
    if not health.broker_answers_metadata(kafka, timeout=5.0):
        raise ServiceUnavailableError(
            f"Kafka at {kafka} does not answer; start it (`cdcmirror stack up`) or fix "
            "kafka.bootstrap_servers"
        )
    click.echo(f"kafka    ok  {kafka}")
    plugins = health.connect_plugins(connect, timeout=5.0)
    if plugins is None:
        raise ServiceUnavailableError(
            f"Kafka Connect at {connect} does not answer; start it (`cdcmirror stack up`) "
            "or fix connect.url"
        )
    debezium = sorted(p for p in plugins if p.startswith("io.debezium."))
    click.echo(f"connect  ok  {connect}  ({len(debezium)} Debezium connectors)")
    from cdcmirror.bootstrap.connector import connector_name
    from cdcmirror.connect_client import ConnectClient
    from cdcmirror.connector_health import connector_problem
    from cdcmirror.exceptions import ConnectorError

    name = connector_name(str(config.get("source", "name")))
    problem = None
    if name not in ConnectClient(connect).names():
        click.echo(f"connector -- {name} is not registered yet (`cdcmirror bootstrap` does it)")
    else:
        problem = connector_problem(connect, name)
        if not problem:
            click.echo(f"connector ok {name} RUNNING")
    binlog = None
    if config.get("source", "dialect") != "postgresql":
        from cdcmirror.binlog_health import binlog_health
        from cdcmirror.source.connection import open_engine

        engine = open_engine(config)
        try:
            binlog = binlog_health(engine, connect, name)
        finally:
            engine.dispose()
        if not binlog:
            click.echo("binlog   ok  ROW, FULL row image, not compressed, connector inside history")
    if problem or binlog:  # both: a failed task may be the sign of a reset binlog
        raise ConnectorError("; ".join(p for p in (problem, binlog) if p))
    for warning in _slot_warnings(config):
        click.echo(f"warning: {warning}", err=True)
    if config.get("kafka", "format") == "avro":
        from cdcmirror.bootstrap.run import require_registry

        click.echo(f"registry ok  {require_registry(config)}")


def _slot_warnings(config: Any) -> list[str]:
    """Inactive cdcmirror replication slots on a PostgreSQL source (they hold WAL)."""
    if config.get("source", "dialect") != "postgresql":
        return []
    from cdcmirror.source.connection import open_engine
    from cdcmirror.source.slots import cdcmirror_slots, inactive_warning

    engine = open_engine(config)
    try:
        return [w for s in cdcmirror_slots(engine) if (w := inactive_warning(s))]
    finally:
        engine.dispose()


PROGRESS_BAR_MIN_TABLES = 20


@cli.command("bootstrap")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option(
    "--output",
    "output_opt",
    type=click.Choice(["text", "json"]),
    default=None,
    help="text (default) or json: the mapping source table -> Iceberg table, per column.",
)
@click.option("--no-connector", is_flag=True, help="Create the tables only; leave Connect alone.")
@click.pass_context
@handle_errors
def bootstrap_cmd(
    ctx: click.Context, dry_run: bool, output_opt: str | None, no_connector: bool
) -> None:
    """Discover the source tables, create or evolve their Iceberg tables, register the
    Debezium connector. Exit 1 when a table has drifted in a way cdcmirror will not change."""
    from cdcmirror.bootstrap.report import result_json, result_text
    from cdcmirror.bootstrap.run import bootstrap
    from cdcmirror.config import load_config

    config = load_config(ctx.obj["config_path"])
    output = output_opt or ctx.obj["output"]
    bar: Any = None

    def on_table(name: str) -> None:
        nonlocal bar
        if bar is not None:
            bar.update(1)

    def start_bar(total: int) -> None:
        nonlocal bar
        if total >= PROGRESS_BAR_MIN_TABLES:
            bar = click.progressbar(length=total, label="iceberg tables", file=sys.stderr)
            bar.__enter__()

    try:
        result = bootstrap(
            config,
            dry_run=dry_run,
            register_connector=not no_connector,
            on_table=on_table,
            on_start=start_bar,
            on_step=_say,
        )
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if output == "json":
        click.echo(json.dumps(result_json(result), indent=2))
    else:
        click.echo(result_text(result))
    if result.drift:
        sys.exit(EXIT_DRIFT)


@cli.command("mirror")
@click.option("--available-now", is_flag=True, help="Apply what is in Kafka now, then exit.")
@click.option("--table", "tables", multiple=True, help="Mirror only this table (repeatable).")
@click.pass_context
@handle_errors
def mirror_cmd(ctx: click.Context, available_now: bool, tables: tuple[str, ...]) -> None:
    """The continuous mirroring job: Kafka -> decode -> dedupe by source position -> MERGE
    into Iceberg. SIGTERM finishes the current batch and stops."""
    from cdcmirror.config import load_config
    from cdcmirror.mirror.run import mirror

    config = load_config(ctx.obj["config_path"])
    mirror(config, available_now=available_now, only=list(tables) or None)


@cli.command("reconcile")
@click.option("--table", "tables", multiple=True, help="Check only this table (repeatable).")
@click.option("--deep", is_flag=True, help="Also compare bucketed row checksums; list keys.")
@click.option(
    "--output",
    "output_opt",
    type=click.Choice(["text", "json", "markdown"]),
    default=None,
    help="What to print: a table (default), JSON, or the Markdown report.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the Markdown report to this file.",
)
@click.option(
    "--settle",
    type=int,
    default=None,
    help="Seconds to wait for in-flight events before calling a difference drift "
    "(default reconcile.settle_seconds; 0 = one look).",
)
@click.pass_context
@handle_errors
def reconcile_cmd(
    ctx: click.Context,
    tables: tuple[str, ...],
    deep: bool,
    output_opt: str | None,
    report_path: str | None,
    settle: int | None,
) -> None:
    """Compare each mirrored table with its source: row counts, position reached, lag,
    last snapshot. Exit 0 all in sync, 1 drift or lagging, 2 error."""
    from pathlib import Path

    from cdcmirror.config import load_config
    from cdcmirror.reconcile.compare import exit_code
    from cdcmirror.reconcile.report import result_json, result_markdown, result_text
    from cdcmirror.reconcile.run import ReconcileOptions, reconcile

    config = load_config(ctx.obj["config_path"])
    output = output_opt or ctx.obj["output"]
    options = ReconcileOptions(
        tables=list(tables) or None,
        deep=deep,
        settle_seconds=float(
            config.get("reconcile", "settle_seconds") if settle is None else settle
        ),
        buckets=int(config.get("reconcile", "buckets")),
        max_keys=int(config.get("reconcile", "max_keys")),
    )
    checks, now = reconcile(config, options, progress=_say)
    for warning in _slot_warnings(config):
        _say(f"warning: {warning}")
    source = f"{config.get('source', 'name')} -> {config.get('iceberg', 'namespace')}"
    if report_path:
        Path(report_path).write_text(result_markdown(checks, now, source))
        _say(f"report written to {report_path}")
    if output == "json":
        click.echo(json.dumps(result_json(checks, now), indent=2))
    elif output == "markdown":
        click.echo(result_markdown(checks, now, source))
    else:
        click.echo(result_text(checks, now))
    sys.exit(exit_code(checks))


@cli.command("replay-dead-letters")
@click.option(
    "--table", "table", required=True, help="The mirrored table whose dead letters to apply."
)
@click.pass_context
@handle_errors
def replay_dead_letters_cmd(ctx: click.Context, table: str) -> None:
    """Apply a table's dead-lettered events through the normal position-guarded path once
    their cause is fixed (e.g. `cdcmirror bootstrap` added a column). Safe to run at any
    time. Exit 1 when some still fail (they stay in the dead-letter table, with the reason)."""
    from cdcmirror.config import load_config
    from cdcmirror.mirror.replay import replay_dead_letters

    result = replay_dead_letters(load_config(ctx.obj["config_path"]), table)
    applied = result.replayed - result.still_failing
    click.echo(
        f"{result.table}: {result.replayed} dead letter(s) replayed, {applied} applied "
        f"(or older than the row: nothing to do), {result.still_failing} still failing"
    )
    if result.still_failing:
        sys.exit(EXIT_DRIFT)


@cli.command("teardown")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.option("--yes", is_flag=True, help="Remove without asking (needed to remove anything).")
@click.option("--topics", is_flag=True, help="Also delete the source's Kafka topics.")
@click.option("--checkpoint", is_flag=True, help="Also delete the streaming checkpoint.")
@click.option("--tables", is_flag=True, help="Also drop the mirrored Iceberg tables (the data).")
@click.pass_context
@handle_errors
def teardown_cmd(
    ctx: click.Context, dry_run: bool, yes: bool, topics: bool, checkpoint: bool, tables: bool
) -> None:
    """Remove the mirror: its Debezium connector and PostgreSQL replication slot (which
    otherwise holds WAL until the source's disk is full), its signal rows; with flags its
    topics, checkpoint and Iceberg tables. Exit 1 when something could not be removed."""
    from cdcmirror.config import load_config
    from cdcmirror.exceptions import ConfigError
    from cdcmirror.teardown.plan import plan_teardown
    from cdcmirror.teardown.run import execute, gather

    config = load_config(ctx.obj["config_path"])
    steps = plan_teardown(gather(config), topics, checkpoint, tables)
    listing = "\n".join(f"  {s.line()}" for s in steps) or "  (nothing: no part of it exists)"
    if dry_run or not steps:
        click.echo(f"teardown would remove:\n{listing}" if steps else listing.strip())
        return
    if not yes:
        raise ConfigError(
            f"teardown removes:\n{listing}\nrun again with --yes to remove it "
            "(--dry-run only lists)"
        )
    left = execute(config, steps, _say)
    failed = {id(step) for step, _ in left}
    for step in steps:
        if id(step) not in failed:
            click.echo(f"removed {step.line()}")
    if left:
        lines = "\n".join(f"  {step.line()}: {why}" for step, why in left)
        click.echo(f"could not remove:\n{lines}", err=True)
        sys.exit(EXIT_DRIFT)


@cli.command("repair")
@click.option("--table", "table", required=True, help="The mirrored table to heal.")
@click.option(
    "--keys-from",
    "keys_from",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A `reconcile --deep --output json` report: repair only its drifted keys "
    "(else the whole table is re-read).",
)
@click.pass_context
@handle_errors
def repair_cmd(ctx: click.Context, table: str, keys_from: str | None) -> None:
    """Heal a drifted table without a full reload: Debezium re-reads the drifted rows (an
    incremental snapshot through the source's signal table) and the mirror job applies
    them; rows only in the mirror are removed once the source confirms they are gone."""
    from pathlib import Path

    from cdcmirror.config import load_config
    from cdcmirror.repair.run import repair

    config = load_config(ctx.obj["config_path"])
    result = repair(config, table, Path(keys_from) if keys_from else None, progress=_say)
    if ctx.obj["output"] == "json":
        click.echo(json.dumps(result.__dict__, indent=2))
        return
    reread = "every row" if result.reread is None else f"{result.reread} row(s)"
    click.echo(
        f"{result.table}: Debezium re-reads {reread}"
        if result.signal_id
        else f"{result.table}: nothing to re-read"
    )
    if result.removed or result.kept:
        click.echo(f"{result.table}: removed {result.removed} row(s) the source does not have")
    click.echo(
        "the running mirror job applies the re-read rows; confirm with "
        f"`cdcmirror reconcile --deep --table {table}`"
    )


@cli.command("maintain")
@click.option("--table", "tables", multiple=True, help="Maintain only this table (repeatable).")
@click.pass_context
@handle_errors
def maintain_cmd(ctx: click.Context, tables: tuple[str, ...]) -> None:
    """Compact small data files and position delete files, expire old snapshots, remove
    orphan files ([maintain] settings). Safe while the mirror runs: a commit conflict is
    retried. Prints file counts and sizes before and after."""
    from cdcmirror.config import load_config
    from cdcmirror.maintain.report import result_json, result_text
    from cdcmirror.maintain.run import maintain

    config = load_config(ctx.obj["config_path"])
    results = maintain(config, list(tables) or None, progress=_say)
    if ctx.obj["output"] == "json":
        click.echo(json.dumps(result_json(results), indent=2))
    else:
        click.echo(result_text(results))


@cli.group("config")
def config_group() -> None:
    """Inspect the effective configuration."""


@config_group.command("show")
@click.pass_context
@handle_errors
def config_show(ctx: click.Context) -> None:
    """Print the effective configuration, secrets masked."""
    from cdcmirror.config import load_config, redacted

    config = load_config(ctx.obj["config_path"])
    click.echo(json.dumps(redacted(config), indent=2))


def main() -> None:
    cli()


if __name__ == "__main__":  # pragma: no cover
    main()
