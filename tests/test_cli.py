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


@pytest.mark.parametrize(
    "second",
    [
        pytest.param("shop_mirror.clicks", id="qualified-with-the-namespace"),
        pytest.param("clicks", id="same-spelling"),
    ],
)
def test_two_streams_of_one_table_in_two_spellings_exit_2(tmp_path: Path, second: str) -> None:
    """``clicks`` and ``shop_mirror.clicks`` are one table in namespace ``shop_mirror``: one
    job would keep one stream and drop the other topic's events (issue 67, item 4)."""
    path = tmp_path / "c.toml"
    path.write_text(
        '[iceberg]\nnamespace = "shop_mirror"\n'
        '[[streams]]\ntopic = "clicks"\ntable = "clicks"\nschema = "infer"\n'
        f'[[streams]]\ntopic = "clicks_eu"\ntable = "{second}"\nschema = "infer"\n'
    )
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "show"])
    assert result.exit_code == 2, result.output
    assert "both write table shop_mirror.clicks" in result.output, result.output


def test_streams_of_one_name_in_two_namespaces_are_two_tables(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[iceberg]\nnamespace = "shop_mirror"\n'
        '[[streams]]\ntopic = "clicks"\ntable = "clicks"\nschema = "infer"\n'
        '[[streams]]\ntopic = "clicks_eu"\ntable = "eu.clicks"\nschema = "infer"\n'
    )
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "show"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("variable", "url"),
    [
        ("CDCMIRROR_SOURCE__URL", "postgresql://cdc:{pw}@db:5432/shop"),
        ("CDCMIRROR_ICEBERG__CATALOG__URI", "https://admin:{pw}@rest:8181/catalog"),
        ("CDCMIRROR_KAFKA__SCHEMA_REGISTRY_URL", "http://sr:{pw}@registry:8081/apis/ccompat/v7"),
        ("CDCMIRROR_CONNECT__URL", "http://connect:{pw}@connect:8083"),
        ("CDCMIRROR_SPARK__CONF__SPARK.HISTORY.URL", "http://h:{pw}@history:18080"),
        ("CDCMIRROR_SOURCE__URL", "mysql://cdc@db:3306/shop?ssl=true&password={pw}"),
    ],
    ids=["source", "catalog", "registry", "connect", "spark-conf", "query-parameter"],
)
def test_config_show_masks_the_password_of_every_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, url: str
) -> None:
    """Every URL-valued setting keeps its password out of ``config show`` (issue 67, item
    10), not only ``source.url``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, url.format(pw="hunter2secret"))
    result = CliRunner().invoke(cli, ["config", "show"])
    assert result.exit_code == 0, result.output
    assert "hunter2secret" not in result.output, result.output
    assert url.format(pw="***") in result.output, result.output
