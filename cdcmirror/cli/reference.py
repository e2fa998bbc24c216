"""The reference pages of the docs site written from the code, so that they cannot drift
from it: every command and option (from the click group), every Prometheus metric (from
the job's registry), every error message cdcmirror raises (from the ``raise`` statements of
its own modules) and every setting (``config/reference.py``). A test compares the committed
pages with these; ``make docs`` writes them:

    python -m cdcmirror.cli.reference docs/reference
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click

from cdcmirror import exceptions
from cdcmirror.cli import cli
from cdcmirror.config.reference import reference_markdown
from cdcmirror.metrics import MirrorMetrics

PACKAGE = Path(__file__).resolve().parents[1]
GENERATED = "Written from the code by `make docs`; a test fails when the two differ."
EXIT_CODES = (
    (exceptions.EXIT_OK, "success; `reconcile`: every table in sync"),
    (
        exceptions.EXIT_DRIFT,
        "drift or a data problem found (a table differs, a value that "
        "does not convert, a change bootstrap will not make); `stack status`: not all healthy",
    ),
    (
        exceptions.EXIT_USAGE,
        "bad usage or configuration, an unreachable or refusing "
        "service, an unresolvable jar, a job that cannot go on safely",
    ),
)


# -- commands ----------------------------------------------------------------------------
def _commands(group: click.Group, prefix: str) -> Iterator[tuple[str, click.Command]]:
    for name in sorted(group.commands):
        command = group.commands[name]
        if command.hidden:
            continue
        path = f"{prefix} {name}"
        yield path, command
        if isinstance(command, click.Group):
            yield from _commands(command, path)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option_rows(command: click.Command) -> list[str]:
    rows = []
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        names = ", ".join(f"`{n}`" for n in (*param.opts, *param.secondary_opts))
        if param.is_flag:
            kind = "flag"
        elif isinstance(param.type, click.Choice):
            kind = " \\| ".join(f"`{c}`" for c in param.type.choices)
        else:
            kind = param.type.name.lower()
        if param.multiple:
            kind += ", repeatable"
        default = param.default
        shown = "" if default in (None, False, ()) or param.is_flag else f"`{default}`"
        rows.append(f"| {names} | {kind} | {shown} | {_cell(param.help or '')} |")
    return rows


def _arguments(command: click.Command) -> str:
    args = [p for p in command.params if isinstance(p, click.Argument)]
    return " ".join(p.make_metavar(click.Context(command)) for p in args)


def commands_markdown() -> str:
    """Every command of the ``cdcmirror`` group, its options and the exit codes."""
    parts = [
        "# Commands",
        "",
        f"Every `cdcmirror` command and option. {GENERATED}",
        "",
        "## `cdcmirror`",
        "",
        _cell(cli.help or ""),
        "",
        "Options before the command apply to every command:",
        "",
        "| option | type | default | what it does |",
        "| --- | --- | --- | --- |",
        *_option_rows(cli),
        "",
        "## Exit codes",
        "",
        "| code | meaning |",
        "| --- | --- |",
        *(f"| {code} | {text} |" for code, text in EXIT_CODES),
    ]
    for path, command in _commands(cli, "cdcmirror"):
        usage = f"{path} [OPTIONS]" + (f" {a}" if (a := _arguments(command)) else "")
        if isinstance(command, click.Group):
            usage = f"{path} COMMAND [OPTIONS]"
        parts += [
            "",
            f"## `{path}`",
            "",
            "```",
            usage,
            "```",
            "",
            inspect.cleandoc(command.help or ""),
        ]
        rows = _option_rows(command)
        if rows:
            parts += ["", "| option | type | default | what it does |", "| --- | --- | --- | --- |"]
            parts += rows
    return "\n".join(parts) + "\n"


# -- metrics -----------------------------------------------------------------------------
def metrics_markdown() -> str:
    """Every series the continuous job serves with ``mirror.metrics_port`` set."""
    metrics = MirrorMetrics()
    parts = [
        "# Metrics",
        "",
        "The Prometheus series `cdcmirror mirror` serves at "
        "`http://<mirror.metrics_host>:<mirror.metrics_port>/metrics` when `metrics_port` is "
        "set (`0`, the default, serves none). They count what the batch lines say. "
        f"{GENERATED}",
        "",
        "| metric | type | labels | what |",
        "| --- | --- | --- | --- |",
    ]
    for family in metrics.registry.collect():
        name = family.name
        suffix = {"counter": "_total", "histogram": "_bucket, _sum, _count"}.get(family.type, "")
        shown = f"`{name}{suffix}`" if family.type != "histogram" else f"`{name}` ({suffix})"
        labels = sorted(
            {k for s in family.samples for k in s.labels if k != "le"}
            | set(_label_names(metrics, name))
        )
        label_text = ", ".join(f"`{label}`" for label in labels)
        parts.append(f"| {shown} | {family.type} | {label_text} | {_cell(family.documentation)} |")
    return "\n".join(parts) + "\n"


def _label_names(metrics: MirrorMetrics, name: str) -> tuple[str, ...]:
    for value in vars(metrics).values():
        if getattr(value, "_name", None) == name:
            return tuple(getattr(value, "_labelnames", ()))
    return ()


# -- errors ------------------------------------------------------------------------------
@dataclass(frozen=True)
class RaisedMessage:
    """One ``raise SomeError(...)`` of cdcmirror: its class, its text with each value it
    formats in shown as ``{…}``, and where it is."""

    error: str
    text: str
    module: str


def _text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                out.append("{" + ast.unparse(value.value).replace("self.", "") + "}")
            elif isinstance(value, ast.Constant):
                out.append(str(value.value))
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return None if left is None or right is None else left + right
    return None


def raised_messages(package: Path = PACKAGE) -> list[RaisedMessage]:
    """Every message a cdcmirror error is raised with in the package's own modules, in
    module order (texts built in other ways are left out)."""
    errors = {
        name
        for name, value in vars(exceptions).items()
        if isinstance(value, type) and issubclass(value, exceptions.CdcMirrorError)
    }
    found = []
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package.parent).with_suffix("").as_posix().replace("/", ".")
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            # a message too long for its raise statement is built by a ``*_message`` function
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_message"):
                for ret in ast.walk(node):
                    text = _text(ret.value) if isinstance(ret, ast.Return) and ret.value else None
                    if text:
                        found.append(
                            RaisedMessage("CdcMirrorError", " ".join(text.split()), module)
                        )
            if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
                continue
            func = node.exc.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name not in errors or not node.exc.args:
                continue
            text = _text(node.exc.args[0])
            if text:
                found.append(RaisedMessage(name, " ".join(text.split()), module))
    return found


def errors_markdown() -> str:
    """The error messages, grouped by the error's kind, with its exit code."""
    messages = raised_messages()
    parts = [
        "# Error messages",
        "",
        "Every error message cdcmirror raises on purpose, grouped by kind, with the exit code "
        "the command then leaves with. `{…}` stands for a value filled in when it is raised "
        "(a table, a setting, a service's address). Each message names the thing and what "
        f"to do; [Troubleshooting](../troubleshooting.md) explains the usual ones. {GENERATED}",
    ]
    kinds = [
        value
        for value in vars(exceptions).values()
        if isinstance(value, type) and issubclass(value, exceptions.CdcMirrorError)
    ]
    for kind in kinds:
        mine = [m for m in messages if m.error == kind.__name__]
        if not mine:
            continue
        doc = " ".join((kind.__doc__ or "").split())
        parts += ["", f"## {kind.__name__} (exit {kind.exit_code})", "", doc, ""]
        parts += ["| message | raised in |", "| --- | --- |"]
        for m in mine:
            text = m.text.replace("`", "'")
            parts.append(f"| `{_cell(text).replace('|', '/')}` | `{m.module}` |")
    return "\n".join(parts) + "\n"


PAGES = {
    "commands.md": commands_markdown,
    "configuration.md": reference_markdown,
    "errors.md": errors_markdown,
    "metrics.md": metrics_markdown,
}


def main(argv: list[str]) -> None:
    """Write every generated page into the directory named."""
    target = Path(argv[0]) if argv else PACKAGE.parent / "docs" / "reference"
    for name, page in PAGES.items():
        (target / name).write_text(page())


if __name__ == "__main__":
    main(sys.argv[1:])
