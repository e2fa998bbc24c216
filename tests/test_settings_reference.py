"""docs/settings.md is written from the declaration of the settings: a setting added, changed
or documented there without `make docs` fails here."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cdcmirror.cli import cli
from cdcmirror.config.reference import reference_markdown
from cdcmirror.config.settings import SECTIONS

DOC = Path(__file__).resolve().parents[1] / "docs" / "settings.md"


def test_the_written_reference_is_the_declarations() -> None:
    assert DOC.read_text() == reference_markdown(), "run `make docs` and commit docs/settings.md"


def test_every_setting_has_its_row_and_its_variable() -> None:
    text = reference_markdown()
    for section in SECTIONS:
        assert f"## `[{section.NAME}]`" in text
        for key in section.model_fields:
            assert f"| `{key}` | `CDCMIRROR_{section.NAME.upper()}__{key.upper()}` |" in text


def test_config_reference_prints_it() -> None:
    result = CliRunner().invoke(cli, ["config", "reference"])
    assert result.exit_code == 0 and result.output == reference_markdown()
