"""The tests in tiers that say what they need: ``tests/`` no JVM, ``spark_tests/`` a local
Spark only, ``integration_tests/`` the services. What they share is in ``support/``: no test
module imports another (or a conftest), and benchmarks and scripts import ``support``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIERS = ("tests", "spark_tests", "integration_tests")
SERVICES = ("stack", "postgres", "mariadb", "postgres_changes", "mariadb_changes")


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
            out.extend(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


def test_no_test_module_imports_another_or_a_conftest() -> None:
    wrong = sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for tier in (*TIERS, "support", "benchmarks", "scripts")
        for path in (ROOT / tier).rglob("*.py")
        for name in _imports(path)
        if name.split(".")[0] in TIERS
        and (name.split(".")[-1].startswith("test_") or name.endswith(".conftest"))
    )
    assert not wrong, "\n".join(wrong)


def test_benchmarks_and_scripts_import_support_not_tests() -> None:
    wrong = sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for folder in ("benchmarks", "scripts")
        for path in (ROOT / folder).rglob("*.py")
        for name in _imports(path)
        if name.split(".")[0] in TIERS
    )
    assert not wrong, "\n".join(wrong)


def test_the_spark_tests_need_no_service() -> None:
    """A Spark test asks for no service fixture and imports no service client."""
    wrong = []
    for path in (ROOT / "spark_tests").glob("test_*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                asked = {a.arg for a in node.args.args} & set(SERVICES)
                wrong += [f"{path.name}:{node.name} asks for {a}" for a in sorted(asked)]
        wrong += [f"{path.name} imports {n}" for n in _imports(path) if n == "support.services"]
    assert not wrong, "\n".join(wrong)


def test_fixture_files_are_read_from_support() -> None:
    """The data files the tests share live in ``support/fixtures``; a test that looks for them
    beside itself finds nothing once the files move (they did)."""
    wrong = sorted(
        str(path.relative_to(ROOT))
        for tier in TIERS
        for path in (ROOT / tier).rglob("*.py")
        if path != Path(__file__).resolve() and '.parent / "fixtures"' in path.read_text()
    )
    assert not wrong, "read these from support.FIXTURES_DIR: " + ", ".join(wrong)


def test_benchmarks_scripts_and_support_import_what_cdcmirror_has() -> None:
    """Benchmarks and scripts run outside the tests: a name they import from cdcmirror that a
    move took away shows here, not on the day someone runs them."""
    import importlib
    import importlib.util

    wrong = []
    for folder in ("benchmarks", "scripts", "support"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                    continue
                if node.module.split(".")[0] != "cdcmirror":
                    continue
                where = f"{path.relative_to(ROOT)}: {node.module}"
                try:
                    module = importlib.import_module(node.module)
                except ImportError as exc:
                    wrong.append(f"{where} ({exc})")
                    continue
                wrong += [
                    f"{where}.{a.name}"
                    for a in node.names
                    if not hasattr(module, a.name)
                    and importlib.util.find_spec(f"{node.module}.{a.name}") is None
                ]
    assert not wrong, "\n".join(wrong)
