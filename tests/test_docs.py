"""The docs site cannot drift from the code: the reference pages are what the code writes,
every page is in the navigation, every TOML example loads through the config loader, every
`cdcmirror …` example parses with the CLI, every Python example imports what exists, and
figures, dates and issue numbers stay on the Benchmarks page."""

from __future__ import annotations

import ast
import importlib
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from cdcmirror.cli import cli
from cdcmirror.cli.reference import PAGES, raised_messages
from cdcmirror.config import load_config
from cdcmirror.exceptions import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES_MD = sorted(DOCS.rglob("*.md"))
USER_TEXT = [ROOT / "README.md", *(p for p in PAGES_MD if p.name != "benchmarks.md")]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _blocks(kind: str, pages: list[Path] = PAGES_MD) -> list[tuple[str, str]]:
    return [
        (f"{p.relative_to(ROOT)}#{i}", m.group(2))
        for p in pages
        for i, m in enumerate(FENCE.finditer(p.read_text()))
        if m.group(1) == kind
    ]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_reference_page_is_what_the_code_writes(name: str) -> None:
    assert (DOCS / "reference" / name).read_text() == PAGES[name](), (
        f"run `make docs` and commit docs/reference/{name}"
    )


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    nav = re.findall(r":\s*([\w/-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert sorted(nav) == sorted(p.relative_to(DOCS).as_posix() for p in PAGES_MD)


def test_the_readme_fits_on_two_screens_and_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    first = FENCE.search(text)
    assert first is not None
    assert first.group(2).startswith("make quickstart") and "\nmake test " in first.group(2)


@pytest.mark.parametrize("page", USER_TEXT, ids=lambda p: str(p.relative_to(ROOT)))
def test_figures_dates_and_issue_numbers_live_on_the_benchmarks_page(page: Path) -> None:
    text = page.read_text()
    assert not re.findall(r"\b20\d\d-\d\d-\d\d\b", text), "a date"
    assert not re.findall(r"\b[Ii]ssues? \d+", text), "an issue number"
    assert not re.findall(r"\b\d+\.\d+ ?(?:s|ms)\b", text), "a measured time"


@pytest.mark.parametrize("where, text", _blocks("toml"), ids=lambda v: str(v)[:40])
def test_every_toml_example_loads(where: str, text: str, tmp_path: Path) -> None:
    # the secret files an example names are this test's own: the keys and types are checked
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t\n")
    path = tmp_path / "cdcmirror.toml"
    path.write_text(re.sub(r'(_file"?\s*=\s*)"[^"]*"', rf'\1"{secret}"', text))
    config = load_config(path, environ={}, cwd=tmp_path)
    assert config.source.name


def test_a_toml_example_with_a_wrong_key_would_fail(tmp_path: Path) -> None:
    path = tmp_path / "cdcmirror.toml"
    path.write_text('[source]\ndialekt = "postgresql"\n')
    with pytest.raises(ConfigError, match="dialekt"):
        load_config(path, environ={}, cwd=tmp_path)


def _command_lines() -> list[tuple[str, list[str]]]:
    found = []
    for where, text in _blocks("sh"):
        for line in text.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("cdcmirror ") and "$(" not in line:
                found.append((where, shlex.split(line)[1:]))
    return found


@pytest.mark.parametrize("where, args", _command_lines(), ids=lambda v: " ".join(v)[:40])
def test_every_cdcmirror_example_parses(where: str, args: list[str]) -> None:
    # options are parsed before --help is acted on: an unknown one is exit 2
    result = CliRunner().invoke(cli, [*args, "--help"])
    assert result.exit_code == 0, (where, result.output)


def test_an_example_with_an_unknown_option_would_fail() -> None:
    assert CliRunner().invoke(cli, ["bootstrap", "--dry-rn", "--help"]).exit_code == 2


@pytest.mark.parametrize("where, text", _blocks("python"), ids=lambda v: str(v)[:40])
def test_every_python_example_imports_what_exists(where: str, text: str) -> None:
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), (where, node.module, alias.name)


def test_the_error_reference_finds_the_raised_messages() -> None:
    texts = [m.text for m in raised_messages()]
    assert len(texts) > 100
    assert any(t.startswith("namespace {namespace} has no table created by") for t in texts)
    assert any("come from a restarted source history" in t for t in texts)  # a *_message
