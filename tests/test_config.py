from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from cdcmirror import dialects
from cdcmirror.config import load_config
from cdcmirror.config.load import choices_of
from cdcmirror.config.masking import mask_url_password, redacted, secret_keys
from cdcmirror.config.settings import SECTIONS, Kafka, Source
from cdcmirror.exceptions import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cdcmirror.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file(tmp_path: Path) -> None:
    config = load_config(environ={}, cwd=tmp_path)
    assert config.source_file is None
    assert config.kafka.bootstrap_servers == "127.0.0.1:9092"
    assert config.path("mirror", "checkpoint_location") == tmp_path / ".cdcmirror/checkpoints/shop"


def test_file_then_environment_override(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[source]\ndialect = "mysql"\ninclude = ["shop.*"]\n[iceberg.catalog]\ntype = "rest"\n',
    )
    config = load_config(
        path,
        environ={
            "CDCMIRROR_KAFKA__BOOTSTRAP_SERVERS": "k:1",
            "CDCMIRROR_SOURCE__INCLUDE": "a.*, b.c",
            "CDCMIRROR_ICEBERG__CATALOG__URI": "http://rest:8181",
            "CDCMIRROR_CACHE_DIR": "/not/a/config/key",
        },
        cwd=tmp_path,
    )
    assert config.source.dialect == "mysql"
    assert config.kafka.bootstrap_servers == "k:1"
    assert config.source.include == ("a.*", "b.c")
    assert config.iceberg.catalog == {"type": "rest", "uri": "http://rest:8181"}
    assert config.base_dir == tmp_path


@pytest.mark.parametrize(
    ("text", "environ", "message"),
    [
        ('[source]\ndialekt = "mysql"\n', {}, "unknown key source.dialekt"),
        ('[sorce]\nurl = "x"\n', {}, "unknown section [sorce]"),
        ('[source]\ndialect = "oracle"\n', {}, "is not one of postgresql, mysql"),
        ("[mirror]\ndeletes = 3\n", {}, "must be a string"),
        ("[source\n", {}, "not valid TOML"),
        ("", {"CDCMIRROR_KAFKA__BOOTSTRAP": "x"}, "CDCMIRROR_KAFKA__BOOTSTRAP names unknown"),
    ],
    ids=["unknown-key", "unknown-section", "bad-choice", "wrong-type", "bad-toml", "bad-env"],
)
def test_bad_config_is_named(
    tmp_path: Path, text: str, environ: dict[str, str], message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ=environ, cwd=tmp_path)
    assert message in str(info.value)
    assert info.value.exit_code == 2


def test_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml", environ={}, cwd=tmp_path)


def test_secrets_are_masked(tmp_path: Path) -> None:
    path = write(tmp_path, '[source]\nurl = "postgresql://cdc:hunter2@db/shop"\n')
    config = load_config(path, environ={"CDCMIRROR_SOURCE__PASSWORD": "s3cret"}, cwd=tmp_path)
    shown = str(redacted(config))
    assert "hunter2" not in shown and "s3cret" not in shown
    assert config.source.password == "s3cret"


def test_mask_url_password_leaves_passwordless_urls() -> None:
    assert mask_url_password("postgresql://cdc@db/shop") == "postgresql://cdc@db/shop"


def test_bool_and_int_keys_from_file_and_environment(tmp_path: Path) -> None:
    (tmp_path / "cdcmirror.toml").write_text(
        "[source]\ntinyint1_as_boolean = false\n[maintain]\nevery_batches = 7\n"
    )
    config = load_config(environ={}, cwd=tmp_path)
    assert config.source.tinyint1_as_boolean is False
    assert config.maintain.every_batches == 7
    env = {
        "CDCMIRROR_SOURCE__TINYINT1_AS_BOOLEAN": "true",
        "CDCMIRROR_MAINTAIN__EVERY_BATCHES": "20",
    }
    config = load_config(environ=env, cwd=tmp_path)
    assert config.source.tinyint1_as_boolean is True
    assert config.maintain.every_batches == 20
    with pytest.raises(ConfigError, match="must be true or false"):
        load_config(environ={"CDCMIRROR_SOURCE__TINYINT1_AS_BOOLEAN": "maybe"}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="keyless_tables = 'drop' is not one of append, skip"):
        load_config(environ={"CDCMIRROR_SOURCE__KEYLESS_TABLES": "drop"}, cwd=tmp_path)


def test_format_version_other_than_2_is_refused_with_the_reason(tmp_path: Path) -> None:
    """Format 3 was taken, and bootstrap then failed on pyiceberg's traceback (pyiceberg 0.12
    cannot write format-3 metadata); format 1 has no row-level deletes. Both are refused
    when the config loads."""
    assert load_config(environ={}, cwd=tmp_path).iceberg.format_version == 2
    with pytest.raises(ConfigError, match=r"format_version = 3 .*pyiceberg.*use 2"):
        load_config(environ={"CDCMIRROR_ICEBERG__FORMAT_VERSION": "3"}, cwd=tmp_path)
    (tmp_path / "cdcmirror.toml").write_text("[iceberg]\nformat_version = 1\n")
    with pytest.raises(ConfigError, match=r"format_version = 1 .*row-level deletes.*use 2"):
        load_config(environ={}, cwd=tmp_path)


def test_tombstone_retention_defaults_to_a_week_and_may_not_be_negative(tmp_path: Path) -> None:
    """Kafka's default retention is 168 hours: a replay reaches no further back. 0 keeps
    tombstones for ever; a negative retention would prune tombstones of deletes not yet
    made, and is refused."""
    assert load_config(environ={}, cwd=tmp_path).maintain.tombstone_retention_hours == 168
    env = {"CDCMIRROR_MAINTAIN__TOMBSTONE_RETENTION_HOURS": "0"}
    assert load_config(environ=env, cwd=tmp_path).maintain.tombstone_retention_hours == 0
    (tmp_path / "cdcmirror.toml").write_text("[maintain]\ntombstone_retention_hours = -1\n")
    with pytest.raises(ConfigError, match=r"tombstone_retention_hours = -1 is negative.*0 to"):
        load_config(environ={}, cwd=tmp_path)


def test_metrics_port_must_be_a_port(tmp_path: Path) -> None:
    assert load_config(environ={}, cwd=tmp_path).mirror.metrics_port == 0  # off
    env = {"CDCMIRROR_MIRROR__METRICS_PORT": "9464"}
    assert load_config(environ=env, cwd=tmp_path).mirror.metrics_port == 9464
    with pytest.raises(ConfigError, match=r"mirror.metrics_port = 70000 is not a TCP port"):
        load_config(environ={"CDCMIRROR_MIRROR__METRICS_PORT": "70000"}, cwd=tmp_path)


def test_secrets_inside_catalog_and_spark_tables_are_masked(tmp_path: Path) -> None:
    env = {
        "CDCMIRROR_ICEBERG__CATALOG__URI": "http://127.0.0.1:8181",
        "CDCMIRROR_ICEBERG__CATALOG__S3.SECRET-ACCESS-KEY": "hunter2",
        "CDCMIRROR_ICEBERG__CATALOG__CREDENTIAL": "client:hunter3",
        "CDCMIRROR_SPARK__CONF__SPARK.HADOOP.FS.S3A.SECRET.KEY": "hunter4",
    }
    shown = str(redacted(load_config(environ=env, cwd=tmp_path)))
    assert "hunter" not in shown, shown
    assert "http://127.0.0.1:8181" in shown


def test_every_setting_is_documented_and_the_dialects_are_the_engines() -> None:
    undocumented = [
        f"{section.NAME}.{key}"
        for section in SECTIONS
        for key, info in section.model_fields.items()
        if not info.description
    ]
    assert not undocumented
    assert choices_of(Source, "dialect") == dialects.NAMES
    assert secret_keys(Kafka) == {"sasl_password", "schema_registry_password"}


def test_sections_are_typed_and_frozen(tmp_path: Path) -> None:
    env = {"CDCMIRROR_KAFKA__FORMAT": "avro", "CDCMIRROR_MIRROR__PARALLELISM": "7"}
    config = load_config(environ=env, cwd=tmp_path)
    assert config.kafka.avro and not config.kafka.with_schemas
    assert load_config(environ={}, cwd=tmp_path).kafka.with_schemas
    assert config.mirror.parallelism == 7 and config.values["mirror"]["parallelism"] == 7
    with pytest.raises(ValidationError, match="frozen"):
        config.mirror.parallelism = 8


def test_the_repr_of_a_config_holds_no_secret(tmp_path: Path) -> None:
    env = {
        "CDCMIRROR_SOURCE__PASSWORD": "pw-one",
        "CDCMIRROR_SOURCE__URL": "postgresql://cdc:pw-two@db:5432/shop",
        "CDCMIRROR_SPARK__CONF__FS__S3A__SECRET__KEY": "pw-three",
    }
    text = repr(load_config(environ=env, cwd=tmp_path))
    assert "shop" in text and not any(f"pw-{n}" in text for n in ("one", "two", "three"))


def test_any_key_from_a_file_by_its_env_variable(tmp_path: Path) -> None:
    """Docker secrets' convention, ``<VARIABLE>_FILE``: scalar keys and keys of tables."""
    (tmp_path / "s3").write_text("s3-secret\n")
    (tmp_path / "db").write_text("db-secret\n")
    env = {
        "CDCMIRROR_ICEBERG__CATALOG__S3.SECRET-ACCESS-KEY_FILE": str(tmp_path / "s3"),
        "CDCMIRROR_SOURCE__PASSWORD_FILE": str(tmp_path / "db"),
        "CDCMIRROR_SPARK__CONF__SPARK.HADOOP.FS.S3A.SECRET.KEY_FILE": str(tmp_path / "s3"),
    }
    config = load_config(environ=env, cwd=tmp_path)
    assert config.iceberg.catalog["s3.secret-access-key"] == "s3-secret"
    assert config.source.password == "db-secret"
    assert config.spark.conf["spark.hadoop.fs.s3a.secret.key"] == "s3-secret"
    assert "s3-secret" not in str(redacted(config)) and "db-secret" not in str(redacted(config))


def test_a_relative_file_path_is_relative_to_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "k").write_text("kafka-pw\n")
    (tmp_path / "etc" / "cdcmirror.toml").write_text(
        '[kafka]\nsasl_username = "u"\nsecurity_protocol = "SASL_SSL"\n'
    )
    env = {"CDCMIRROR_KAFKA__SASL_PASSWORD_FILE": "k"}
    config = load_config(tmp_path / "etc" / "cdcmirror.toml", environ=env, cwd=tmp_path)
    assert config.kafka.sasl_password == "kafka-pw"


def test_any_key_of_the_file_can_be_read_from_a_file(tmp_path: Path) -> None:
    """``<key>_file`` beside any string key, inside tables too (``config/files.py``)."""
    (tmp_path / "db").write_text("db-secret\n")
    (tmp_path / "s3").write_text("s3-secret")
    (tmp_path / "cdcmirror.toml").write_text(
        '[source]\npassword_file = "db"\n[iceberg.catalog]\n"s3.secret-access-key_file" = "s3"\n'
    )
    config = load_config(environ={}, cwd=tmp_path)
    assert config.source.password == "db-secret"
    assert config.iceberg.catalog["s3.secret-access-key"] == "s3-secret"
    assert "s3.secret-access-key_file" not in config.iceberg.catalog
    assert "s3-secret" not in str(redacted(config)) and "db-secret" not in str(redacted(config))
    # the environment overrides the file's setting, as for any key
    env = {"CDCMIRROR_SOURCE__PASSWORD": "from-env"}
    assert load_config(environ=env, cwd=tmp_path).source.password == "from-env"


def test_a_key_and_its_file_in_the_same_place_are_refused(tmp_path: Path) -> None:
    (tmp_path / "cdcmirror.toml").write_text('[source]\npassword = "a"\npassword_file = "f"\n')
    with pytest.raises(ConfigError, match=r"source\.password and source\.password_file"):
        load_config(environ={}, cwd=tmp_path)
    (tmp_path / "cdcmirror.toml").write_text('[iceberg.catalog]\ntoken = "a"\ntoken_file = "f"\n')
    with pytest.raises(ConfigError, match="token and token_file are both set"):
        load_config(environ={}, cwd=tmp_path)


def test_unreadable_secret_file_names_the_variable(tmp_path: Path) -> None:
    env = {"CDCMIRROR_ICEBERG__CATALOG__TOKEN_FILE": str(tmp_path / "missing")}
    with pytest.raises(ConfigError, match=r"CDCMIRROR_ICEBERG__CATALOG__TOKEN_FILE: the file"):
        load_config(environ=env, cwd=tmp_path)


def test_unknown_file_variable_is_still_unknown(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown config key source\.nothing_file"):
        load_config(environ={"CDCMIRROR_SOURCE__NOTHING_FILE": "/x"}, cwd=tmp_path)
