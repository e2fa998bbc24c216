"""The mirror's commands: bootstrap, mirror, reconcile, point, replay-dead-letters,
teardown, maintain, config show (repair: ``repair.py``). Each loads the config and calls its
``commands/`` module."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from cdcmirror.cli.root import _say, cli, handle_errors, slot_warnings
from cdcmirror.exceptions import EXIT_DRIFT

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
@click.option(
    "--initial-load",
    type=click.Choice(["auto", "spark", "debezium"]),
    default=None,
    help="How a new connector's tables get their rows (default [bootstrap] initial_load): "
    "spark reads them over JDBC in parallel, debezium snapshots them through Kafka.",
)
@click.pass_context
@handle_errors
def bootstrap_cmd(
    ctx: click.Context,
    dry_run: bool,
    output_opt: str | None,
    no_connector: bool,
    initial_load: str | None,
) -> None:
    """Discover the source tables, create or evolve their Iceberg tables, load their rows,
    register the Debezium connector. Exit 1 when a table has drifted in a way cdcmirror will
    not change, or when the initial load left rows out (named)."""
    from cdcmirror.bootstrap.report import result_json, result_text
    from cdcmirror.commands.bootstrap import bootstrap
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
            initial_load=initial_load,
            on_progress=show_load_progress(sys.stderr),
        )
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if output == "json":
        click.echo(json.dumps(result_json(result), indent=2))
    else:
        click.echo(result_text(result))
    if result.drift or result.stream_drift or result.bad_rows:
        sys.exit(EXIT_DRIFT)


def show_load_progress(stream: Any) -> Any:
    """The initial load's progress: a line rewritten in place on a terminal, a JSON line
    per table and report otherwise (logs, CI)."""
    terminal = stream.isatty()

    def show(progress: Any) -> None:
        if terminal:
            end = "\n" if progress.done else ""
            stream.write("\r\033[K" + progress.text() + end)
        else:
            stream.write(progress.json_line() + "\n")
        stream.flush()

    return show


@cli.command("mirror")
@click.option("--available-now", is_flag=True, help="Apply what is in Kafka now, then exit.")
@click.option("--table", "tables", multiple=True, help="Mirror only this table (repeatable).")
@click.pass_context
@handle_errors
def mirror_cmd(ctx: click.Context, available_now: bool, tables: tuple[str, ...]) -> None:
    """The continuous mirroring job: Kafka -> decode -> dedupe by source position -> MERGE
    into Iceberg. SIGTERM finishes the current batch and stops."""
    from cdcmirror.commands.mirror import mirror
    from cdcmirror.config import load_config

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

    from cdcmirror.commands.point import point_text
    from cdcmirror.commands.reconcile import ReconcileOptions, reconcile
    from cdcmirror.config import load_config
    from cdcmirror.reconcile.compare import exit_code
    from cdcmirror.reconcile.report import result_json, result_markdown, result_text
    from cdcmirror.streams.reconcile import stream_exit

    config = load_config(ctx.obj["config_path"])
    output = output_opt or ctx.obj["output"]
    options = ReconcileOptions(
        tables=list(tables) or None,
        deep=deep,
        settle_seconds=float(config.reconcile.settle_seconds if settle is None else settle),
        buckets=config.reconcile.buckets,
        max_keys=config.reconcile.max_keys,
    )
    checks, now = reconcile(config, options, progress=_say)
    streams = []
    if config.streams:
        from cdcmirror.commands.stream_reconcile import reconcile_streams

        streams = reconcile_streams(config, options.tables, options.max_keys, _say)
    for warning in slot_warnings(config):
        _say(f"warning: {warning}")
    source = f"{config.source.name} -> {config.iceberg.namespace}"
    if report_path:
        Path(report_path).write_text(result_markdown(checks, now, source))
        _say(f"report written to {report_path}")
    point = consistent_point_of(config, options.tables)
    if output == "json":
        out = result_json(checks, now)
        out["streams"] = [c.as_json() for c in streams]
        if point is not None:
            out["consistent_point"] = point
        click.echo(json.dumps(out, indent=2))
    elif output == "markdown":
        click.echo(result_markdown(checks, now, source))
    else:
        click.echo(result_text(checks, now) if checks else "no CDC table checked")
        if point is not None:
            click.echo(point.get("error") or point_text(point))
    for c in streams if output != "json" else []:
        click.echo("\n".join(c.lines()))
    sys.exit(max([exit_code(checks) if checks else 0, *(stream_exit(c) for c in streams)]))


@cli.command("point")
@click.option("--table", "tables", multiple=True, help="Only this table (repeatable).")
@click.option(
    "--output",
    "output_opt",
    type=click.Choice(["text", "json"]),
    default=None,
    help="What to print: lines (default) or JSON.",
)
@click.pass_context
@handle_errors
def point_cmd(ctx: click.Context, tables: tuple[str, ...], output_opt: str | None) -> None:
    """The consistent point (mirror.consistent_tag): the source transaction every mirrored
    table is tagged at, each table's snapshot at it, and its lag. Read the tables at those
    snapshot ids to see one moment of the source database."""
    from cdcmirror.commands.point import point, point_text
    from cdcmirror.config import load_config

    config = load_config(ctx.obj["config_path"])
    found = point(config, list(tables) or None)
    if (output_opt or ctx.obj["output"]) == "json":
        click.echo(json.dumps(found, indent=2))
    else:
        click.echo(point_text(found))


def consistent_point_of(config: Any, tables: list[str] | None) -> dict[str, Any] | None:
    """The consistent point for reconcile's report, with its age (None: no tag is kept);
    ``{"error": ...}`` when the tables name no point."""
    if not config.mirror.consistent_tag:
        return None
    from cdcmirror.commands.point import point
    from cdcmirror.exceptions import CdcMirrorError

    try:
        return point(config, tables)
    except CdcMirrorError as exc:
        return {"error": f"consistent point: {exc}"}


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
    from cdcmirror.commands.replay import replay_dead_letters
    from cdcmirror.config import load_config

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
    from cdcmirror.bootstrap.teardown import plan_teardown
    from cdcmirror.commands.teardown import execute, gather
    from cdcmirror.config import load_config
    from cdcmirror.exceptions import ConfigError

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


@cli.command("maintain")
@click.option("--table", "tables", multiple=True, help="Maintain only this table (repeatable).")
@click.pass_context
@handle_errors
def maintain_cmd(ctx: click.Context, tables: tuple[str, ...]) -> None:
    """Compact small data files and position delete files, expire old snapshots, remove
    orphan files ([maintain] settings). Safe while the mirror runs: a commit conflict is
    retried. Prints file counts and sizes before and after."""
    from cdcmirror.commands.maintain import maintain
    from cdcmirror.config import load_config
    from cdcmirror.maintain.report import result_json, result_text

    config = load_config(ctx.obj["config_path"])
    results = maintain(config, list(tables) or None, progress=_say)
    if ctx.obj["output"] == "json":
        click.echo(json.dumps(result_json(results), indent=2))
    else:
        click.echo(result_text(results))


@cli.group("config")
def config_group() -> None:
    """The effective configuration, and the reference of every setting."""


@config_group.command("show")
@click.pass_context
@handle_errors
def config_show(ctx: click.Context) -> None:
    """Print the effective configuration, secrets masked."""
    from cdcmirror.config import load_config
    from cdcmirror.config.masking import redacted

    config = load_config(ctx.obj["config_path"])
    click.echo(json.dumps(redacted(config), indent=2))


@config_group.command("reference")
def config_reference() -> None:
    """Print every setting: its key, variable, type, default and what it does (Markdown)."""
    from cdcmirror.config.reference import reference_markdown

    click.echo(reference_markdown(), nl=False)
