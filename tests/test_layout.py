"""The direction of imports shows the architecture: the command line imports the commands,
the commands wire adapters and core, and no package imports one that imports it back."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cdcmirror"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit(module: str) -> str:
    """A package (``cdcmirror.spark``) or a top-level module (``cdcmirror.config``)."""
    return ".".join(module.split(".")[:2])


def imports() -> dict[str, set[str]]:
    """Every cdcmirror module each module imports, at the top or inside a function."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    out: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    target = full if full in modules else node.module
                    if target.startswith("cdcmirror"):
                        out[name].add(target)
            elif isinstance(node, ast.Import):
                out[name] |= {a.name for a in node.names if a.name.startswith("cdcmirror")}
    return out


def test_no_import_cycle_between_packages() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for source, targets in imports().items():
        for target in targets:
            if unit(source) != unit(target):
                edges[unit(source)].add(unit(target))

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            here = todo.pop()
            if here == goal:
                return True
            if here not in seen:
                seen.add(here)
                todo.extend(edges.get(here, ()))
        return False

    cycles = sorted(f"{a} -> {b} -> ... -> {a}" for a in edges for b in edges[a] if reaches(b, a))
    assert not cycles, "\n".join(cycles)


def test_only_the_command_line_imports_the_commands() -> None:
    wrong = sorted(
        f"{source} imports {target}"
        for source, targets in imports().items()
        for target in targets
        if target.startswith("cdcmirror.commands")
        and not source.startswith(("cdcmirror.cli", "cdcmirror.commands"))
    )
    assert not wrong, "\n".join(wrong)


# The layers, top to bottom: what wires things together, the adapters (one SDK or outside
# system each), and the pure core (every other unit: rules, SQL text, types, settings).
WIRING = frozenset({"cli", "commands", "health", "submit"})
ADAPTERS = frozenset(
    {"spark", "catalog", "source", "stack", "clients", "jvm", "checkpoint_store", "metrics"}
)
# the few adapters that use another, and why
SIDEWAYS = {
    ("spark", "jvm"): "a Spark session starts with the jars `jars resolve` fetched",
    ("stack", "jvm"): "the stack runs the jars `jars resolve` fetched",
    ("stack", "clients"): "its health checks speak the services' own APIs",
}


def _layer(module: str) -> str:
    name = unit(module).removeprefix("cdcmirror.")
    return "wiring" if name in WIRING else "adapter" if name in ADAPTERS else "core"


def test_imports_run_one_way() -> None:
    """Wiring imports adapters and core, adapters import core, the core imports neither: a
    rule of the core can be read, and tested, without a service or an SDK."""
    wrong = []
    for source, targets in imports().items():
        for target in targets:
            here, there = _layer(source), _layer(target)
            pair = (
                unit(source).removeprefix("cdcmirror."),
                unit(target).removeprefix("cdcmirror."),
            )
            if here == "core" and there != "core":
                wrong.append(f"{source} (core) imports {target} ({there})")
            elif here == "adapter" and there == "wiring":
                wrong.append(f"{source} (adapter) imports {target} ({there})")
            elif here == there == "adapter" and pair[0] != pair[1] and pair not in SIDEWAYS:
                wrong.append(f"{source} imports the adapter {target}: list it in SIDEWAYS, why")
    assert not wrong, "\n".join(sorted(wrong))


# Each SDK is imported in one place (DESIGN.md, "Where each library lives"): the package or
# module that adapts it, so that the rest of cdcmirror depends on cdcmirror's own types.
SDK_HOMES = {
    "pyspark": ("cdcmirror.spark",),
    "py4j": ("cdcmirror.spark",),
    "pyiceberg": ("cdcmirror.catalog",),
    "sqlalchemy": ("cdcmirror.source",),
    "psycopg": ("cdcmirror.source",),
    "pymysql": ("cdcmirror.source",),
    "confluent_kafka": ("cdcmirror.stack.health",),
    "fastavro": (),
    "pydantic": ("cdcmirror.config",),
}


def sdk_imports() -> list[tuple[str, str]]:
    """(module, SDK) for every import of an SDK, at the top or inside a function."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                top = name.split(".")[0]
                if top in SDK_HOMES:
                    out.append((module_name(path), top))
    return out


def test_each_sdk_is_imported_in_its_one_place() -> None:
    wrong = sorted(
        f"{module} imports {sdk} (its home: {', '.join(SDK_HOMES[sdk]) or 'tests only'})"
        for module, sdk in sdk_imports()
        if not any(module == h or module.startswith(h + ".") for h in SDK_HOMES[sdk])
    )
    assert not wrong, "\n".join(wrong)


def test_production_code_carries_no_fault_injection() -> None:
    """Crash tests end the process through their own hook (support/faulty_cli.py)."""
    carriers = sorted(
        module_name(path)
        for path in PACKAGE.rglob("*.py")
        if "os._exit" in path.read_text() or "CDCMIRROR_FAULT" in path.read_text()
    )
    assert not carriers, carriers


ENGINE_NAMES = frozenset({"postgresql", "mysql", "mariadb"})


def _names_an_engine(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in ENGINE_NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_an_engine(e) for e in node.elts)
    return False


def test_what_differs_between_source_engines_is_asked_of_dialects() -> None:
    """``if dialect == "postgresql"`` spread what differs between the engines over many
    modules; each engine's differences live in ``dialects/<engine>.py`` and everyone else
    asks ``dialects.of(name)`` (a property such as ``.binlog``, ``.quote(...)``)."""
    comparisons = sorted(
        f"{module_name(path)}:{node.lineno}"
        for path in PACKAGE.rglob("*.py")
        if "dialects" not in path.relative_to(PACKAGE).parts
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Compare)
        and any(_names_an_engine(n) for n in (node.left, *node.comparators))
    )
    assert not comparisons, "\n".join(comparisons)
