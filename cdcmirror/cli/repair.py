"""`cdcmirror repair`: heal a drifted table (``commands/repair.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from cdcmirror.cli.commands import show_load_progress
from cdcmirror.cli.root import _say, cli, handle_errors
from cdcmirror.exceptions import EXIT_DRIFT


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
@click.option(
    "--method",
    type=click.Choice(["auto", "reload", "snapshot"]),
    default="auto",
    show_default=True,
    help="How a whole table is re-read: reload = by Spark over JDBC in place (fast; no mirror "
    "job may run on the table meanwhile), snapshot = Debezium's incremental snapshot "
    "(the running mirror job applies it). auto: reload for tables of "
    "[bootstrap] initial_load_min_rows rows or more when no mirror job holds them.",
)
@click.pass_context
@handle_errors
def repair_cmd(ctx: click.Context, table: str, keys_from: str | None, method: str) -> None:
    """Heal a drifted table: re-load it by Spark, or have Debezium re-read the drifted rows
    (an incremental snapshot through the source's signal table) for the mirror job to apply;
    rows only in the mirror are removed once the source confirms they are gone."""

    from dataclasses import asdict

    from cdcmirror.commands.repair import repair
    from cdcmirror.config import load_config

    config = load_config(ctx.obj["config_path"])
    result = repair(
        config,
        table,
        Path(keys_from) if keys_from else None,
        progress=_say,
        method=method,
        on_progress=show_load_progress(sys.stderr),
    )
    if ctx.obj["output"] == "json":
        click.echo(json.dumps(asdict(result), indent=2))
    elif result.reloaded is not None:
        _say_reloaded(result)
    else:
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
    if result.reloaded is not None and result.reloaded.bad:
        sys.exit(EXIT_DRIFT)


def _say_reloaded(result: Any) -> None:
    done = result.reloaded
    rate = done.rows / done.seconds if done.seconds > 0 else 0.0
    click.echo(
        f"{result.table}: re-loaded {done.rows:,} rows by Spark in {done.seconds:.1f}s "
        f"({rate:,.0f} rows/s, {done.reads} reads, from {result.start})"
    )
    if done.kept_deleted:
        click.echo(
            f"{result.table}: kept {done.kept_deleted:,} row(s) the source does not have, "
            "marked deleted"
        )
    if done.bad:
        click.echo(
            f"{result.table}: {done.bad:,} row(s) not loaded (a value does not convert), "
            f"e.g. {done.example}; they are missing from the mirror until changed at the source",
            err=True,
        )
    click.echo(
        "run the mirror job again: it applies every change since, on top; confirm with "
        f"`cdcmirror reconcile --deep --table {result.table.split('.')[-1]}`"
    )
