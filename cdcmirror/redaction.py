"""The configuration as data safe to print: every secret masked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdcmirror.config import STREAMS, Config
from cdcmirror.streams.spec import stream_dict

SECRET_KEYS = frozenset(
    {
        ("source", "password"),
        ("kafka", "sasl_password"),
        ("kafka", "schema_registry_password"),
        ("connect", "password"),
    }
)
MASK = "***"


def redacted(config: Config) -> dict[str, Any]:
    """The configuration as plain data with every secret masked, safe to print."""
    out: dict[str, Any] = {}
    for section, body in config.values.items():
        out[section] = {}
        for key, value in body.items():
            if (section, key) in SECRET_KEYS:
                value = MASK if value else ""
            elif section == "source" and key == "url":
                value = mask_url_password(str(value))
            elif isinstance(value, dict):
                value = masked_table(value)
            out[section][key] = value
    if config.streams:
        out[STREAMS] = [stream_dict(s) for s in config.streams]
    return out


SECRET_WORDS = ("secret", "password", "token", "credential")
"""A key of a free-form table (``[iceberg.catalog]``, ``[spark.conf]``) naming one of these
holds a secret: ``s3.secret-access-key``, ``credential``, ``spark.hadoop.fs.s3a.secret.key``."""


def masked_table(table: Mapping[str, Any]) -> dict[str, Any]:
    """
    >>> masked_table({"uri": "http://r", "s3.secret-access-key": "k", "io": {"token": "t"}})
    {'uri': 'http://r', 's3.secret-access-key': '***', 'io': {'token': '***'}}
    """
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out[key] = masked_table(value)
        elif any(word in key.lower() for word in SECRET_WORDS):
            out[key] = MASK if value else ""
        else:
            out[key] = value
    return out


def mask_url_password(url: str) -> str:
    """Hide the password of a URL.

    >>> mask_url_password("postgresql://cdc:s3cret@127.0.0.1:5432/shop")
    'postgresql://cdc:***@127.0.0.1:5432/shop'
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    if ":" not in creds:
        return url
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:{MASK}@{host}"
