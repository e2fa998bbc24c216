"""The `cdcmirror` command group, its options and error handling. Only this module
configures logging handlers; the subcommands are in ``services.py`` and ``commands.py``."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from cdcmirror import dialects
from cdcmirror.exceptions import CdcMirrorError

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


def slot_warnings(config: Any) -> list[str]:
    """Inactive cdcmirror replication slots on a PostgreSQL source (they hold WAL)."""
    if not dialects.of(config.source.dialect).slot:
        return []
    from cdcmirror.source.connection import open_engine
    from cdcmirror.source.slots import cdcmirror_slots, inactive_warning

    engine = open_engine(config.source)
    try:
        return [w for s in cdcmirror_slots(engine) if (w := inactive_warning(s))]
    finally:
        engine.dispose()
