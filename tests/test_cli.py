from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cdcmirror.cli import cli


def test_unknown_config_key_exits_2_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[kafka]\nbootstrap = "x"\n')
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "show"])
    assert result.exit_code == 2
    assert "unknown key kafka.bootstrap" in result.output


def test_config_show_masks_the_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CDCMIRROR_SOURCE__PASSWORD", "hunter2")
    result = CliRunner().invoke(cli, ["config", "show"])
    assert result.exit_code == 0, result.output
    assert "hunter2" not in result.output
    assert json.loads(result.output)["source"]["password"] == "***"


def test_jars_submit_names_the_entry_point_that_exists() -> None:
    """spark-submit runs the file ``jars submit`` names (the layout once moved it away)."""
    result = CliRunner().invoke(cli, ["jars", "submit"])
    assert result.exit_code == 0, result.output
    args = result.stdout.split()  # progress lines go to stderr
    entry = Path(args[2])
    assert args[0] == "--jars" and entry.is_file(), result.output
    assert entry.name == "submit.py" and entry.parent.name == "cdcmirror"
