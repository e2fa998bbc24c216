"""Secrets made safe to print: the keys the declaration marks secret, the password inside a
URL, the value of a key that names a secret. Pure, and imported by everything that prints
what it was given (``config show``, error messages naming a service's URL)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cdcmirror.config.settings import SECRET, STREAMS, Section
from cdcmirror.streams.spec import stream_dict

if TYPE_CHECKING:
    from cdcmirror.config.load import Config

MASK = "***"

SECRET_WORDS = ("secret", "password", "token", "credential")
"""A key of a free-form table (``[iceberg.catalog]``, ``[spark.conf]``) naming one of these
holds a secret: ``s3.secret-access-key``, ``credential``, ``spark.hadoop.fs.s3a.secret.key``."""


def masked_value(key: str, value: Any) -> Any:
    """``value`` of ``key`` safe to print: a table masked key by key, a secret-named key's
    value masked whole, any other text with the password of each URL in it masked.

    >>> masked_value("uri", "http://u:pw@rest:8181/cat")
    'http://u:***@rest:8181/cat'
    >>> masked_value("io", {"token": "t", "n": 1})
    {'token': '***', 'n': 1}
    """
    if isinstance(value, dict):
        return masked_table(value)
    if any(word in key.lower() for word in SECRET_WORDS):
        return MASK if value else ""
    if isinstance(value, str):
        return mask_url_password(value)
    if isinstance(value, list):
        return [mask_url_password(v) if isinstance(v, str) else v for v in value]
    return value


def masked_table(table: Mapping[str, Any]) -> dict[str, Any]:
    """
    >>> masked_table({"uri": "http://r", "s3.secret-access-key": "k", "io": {"token": "t"}})
    {'uri': 'http://r', 's3.secret-access-key': '***', 'io': {'token': '***'}}
    """
    return {key: masked_value(key, value) for key, value in table.items()}


_QUERY_SECRET = re.compile(
    r"([?&;](?:[^=&;#]*(?:password|secret|token|credential)[^=&;#]*)=)[^&;#]*", re.IGNORECASE
)
_USERINFO = re.compile(r"(://[^/@\s:]*):[^/@\s]*@")


def mask_url_password(url: str) -> str:
    """Hide the password of each URL in ``url``: the one in its user info and any query
    parameter whose name says it is a secret.

    >>> mask_url_password("postgresql://cdc:s3cret@127.0.0.1:5432/shop")
    'postgresql://cdc:***@127.0.0.1:5432/shop'
    >>> mask_url_password("mysql://cdc@db/shop?ssl=1&password=pw")
    'mysql://cdc@db/shop?ssl=1&password=***'
    >>> mask_url_password("a:b@c"), mask_url_password("http://host:8181/v1")
    ('a:b@c', 'http://host:8181/v1')
    """
    if "://" not in url:
        return url
    masked = _USERINFO.sub(lambda m: f"{m.group(1)}:{MASK}@", url)
    return _QUERY_SECRET.sub(lambda m: f"{m.group(1)}{MASK}", masked)


def secret_keys(section: type[Section]) -> frozenset[str]:
    """The keys the declaration marks secret (``settings.setting(..., secret=True)``)."""
    return frozenset(
        key
        for key, info in section.model_fields.items()
        if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get(SECRET)
    )


def redacted(config: Config) -> dict[str, Any]:
    """The configuration as plain data with every secret masked, safe to print: the keys
    declared secret, any key of a free-form table that names a secret, and the password
    inside any URL (``user:password@host``, or a ``password=`` query parameter)."""
    out: dict[str, Any] = {}
    for section in config.sections():
        secrets = secret_keys(type(section))
        out[section.NAME] = {
            key: (MASK if value else "") if key in secrets else masked_value(key, value)
            for key, value in config.values[section.NAME].items()
        }
    if config.streams:
        out[STREAMS] = [stream_dict(s) for s in config.streams]
    return out
