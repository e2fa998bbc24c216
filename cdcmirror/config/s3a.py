"""Where a streaming checkpoint lives, and how Spark (Hadoop's S3A) and cdcmirror's own
readers reach it on S3. Pure.

A checkpoint is a local path (relative to the config file's directory) or an ``s3a://``
URL. The S3A settings are Hadoop's ``fs.s3a.*`` keys: those set in ``[spark.conf]`` as
``spark.hadoop.fs.s3a.*`` win; the rest default to the Iceberg catalog's ``s3.*``
properties, so a warehouse and a checkpoint on the same store are configured once. Without
either, both sides use the AWS default credential chain (environment, profile, instance
role).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from cdcmirror.exceptions import ConfigError

HADOOP_PREFIX = "spark.hadoop."

# Iceberg catalog property -> Hadoop S3A key
FROM_CATALOG = {
    "s3.endpoint": "fs.s3a.endpoint",
    "s3.access-key-id": "fs.s3a.access.key",
    "s3.secret-access-key": "fs.s3a.secret.key",
    "s3.session-token": "fs.s3a.session.token",
    "s3.path-style-access": "fs.s3a.path.style.access",
    "s3.region": "fs.s3a.endpoint.region",
}


def is_url(location: str) -> bool:
    """
    >>> is_url("s3a://warehouse/ck"), is_url(".cdcmirror/checkpoints/shop"), is_url("/a/b")
    (True, False, False)
    """
    return "://" in location


def check_checkpoint_url(location: str) -> None:
    """A checkpoint URL Spark can write: ``s3a://`` (Hadoop's S3 file system) or ``file://``.

    >>> check_checkpoint_url("s3a://warehouse/ck")
    >>> check_checkpoint_url("s3://warehouse/ck")
    Traceback (most recent call last):
    ...
    cdcmirror.exceptions.ConfigError: mirror.checkpoint_location = 's3://warehouse/ck': Spark \
writes its checkpoint through Hadoop, whose S3 file system is s3a://; write \
's3a://warehouse/ck'
    """
    scheme = urlsplit(location).scheme
    if scheme in ("s3a", "file"):
        return
    if scheme == "s3":
        raise ConfigError(
            f"mirror.checkpoint_location = {location!r}: Spark writes its checkpoint through "
            f"Hadoop, whose S3 file system is s3a://; write {'s3a' + location[2:]!r}"
        )
    raise ConfigError(
        f"mirror.checkpoint_location = {location!r}: the checkpoint is a local path or an "
        "s3a:// URL"
    )


def s3a_settings(catalog: Mapping[str, str], spark_conf: Mapping[str, str]) -> dict[str, str]:
    """Hadoop ``fs.s3a.*`` settings: the catalog's ``s3.*`` properties, then ``[spark.conf]``.

    >>> s3a_settings({"s3.endpoint": "http://127.0.0.1:7070", "s3.region": "eu-west-1"},
    ...              {"spark.hadoop.fs.s3a.endpoint.region": "us-east-1"})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'fs.s3a.endpoint': 'http://127.0.0.1:7070', 'fs.s3a.endpoint.region': 'us-east-1',
     'fs.s3a.connection.ssl.enabled': 'false'}
    """
    out = {FROM_CATALOG[k]: str(v) for k, v in catalog.items() if k in FROM_CATALOG}
    for key, value in spark_conf.items():
        if key.startswith(HADOOP_PREFIX + "fs.s3a."):
            out[key[len(HADOOP_PREFIX) :]] = str(value)
    endpoint = out.get("fs.s3a.endpoint", "")
    if endpoint.startswith("http://"):
        out.setdefault("fs.s3a.connection.ssl.enabled", "false")
    return out


def arrow_s3_options(settings: Mapping[str, str]) -> dict[str, str]:
    """The same store for pyarrow's ``S3FileSystem`` (cdcmirror reads the checkpoint with it).

    >>> arrow_s3_options({"fs.s3a.endpoint": "http://127.0.0.1:7070",
    ...                   "fs.s3a.access.key": "k", "fs.s3a.secret.key": "s",
    ...                   "fs.s3a.endpoint.region": "us-east-1"})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'endpoint_override': '127.0.0.1:7070', 'scheme': 'http', 'access_key': 'k',
     'secret_key': 's', 'region': 'us-east-1'}
    """
    out: dict[str, str] = {}
    endpoint = settings.get("fs.s3a.endpoint", "")
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else "//" + endpoint)
        out["endpoint_override"] = parts.netloc
        secure = settings.get("fs.s3a.connection.ssl.enabled", "true").lower() == "true"
        out["scheme"] = parts.scheme or ("https" if secure else "http")
    for hadoop, arrow in (
        ("fs.s3a.access.key", "access_key"),
        ("fs.s3a.secret.key", "secret_key"),
        ("fs.s3a.session.token", "session_token"),
        ("fs.s3a.endpoint.region", "region"),
    ):
        if settings.get(hadoop):
            out[arrow] = settings[hadoop]
    return out


def bucket_and_key(url: str) -> str:
    """The ``bucket/key`` path pyarrow's S3 file system takes for an ``s3a://`` URL.

    >>> bucket_and_key("s3a://warehouse/checkpoints/shop/")
    'warehouse/checkpoints/shop'
    """
    parts = urlsplit(url)
    return f"{parts.netloc}/{parts.path.strip('/')}".rstrip("/")
