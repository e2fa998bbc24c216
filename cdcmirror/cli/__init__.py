"""The `cdcmirror` command line: the group (``root.py``) and its subcommands."""

from __future__ import annotations

from cdcmirror.cli import commands, repair, services  # noqa: F401  (they register the subcommands)
from cdcmirror.cli.root import cli

__all__ = ["cli", "main"]


def main() -> None:
    cli()
