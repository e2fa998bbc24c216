"""The settings reference (docs/reference/configuration.md, compared with the code in
tests/test_docs.py) has a row and a variable for every declared setting."""

from __future__ import annotations

from click.testing import CliRunner

from cdcmirror.cli import cli
from cdcmirror.config.reference import reference_markdown
from cdcmirror.config.settings import SECTIONS


def test_every_setting_has_its_row_and_its_variable() -> None:
    text = reference_markdown()
    for section in SECTIONS:
        assert f"## `[{section.NAME}]`" in text
        for key in section.model_fields:
            assert f"| `{key}` | `CDCMIRROR_{section.NAME.upper()}__{key.upper()}` |" in text


def test_config_reference_prints_it() -> None:
    result = CliRunner().invoke(cli, ["config", "reference"])
    assert result.exit_code == 0 and result.output == reference_markdown()
