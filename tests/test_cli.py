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
