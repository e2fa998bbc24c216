"""The configuration as data safe to print: every secret masked."""

from __future__ import annotations

from typing import Any

from cdcmirror.config import STREAMS, Config
from cdcmirror.masking import MASK, masked_value
from cdcmirror.streams.spec import stream_dict

SECRET_KEYS = frozenset(
    {
        ("source", "password"),
        ("kafka", "sasl_password"),
        ("kafka", "schema_registry_password"),
        ("connect", "password"),
    }
)


def redacted(config: Config) -> dict[str, Any]:
    """The configuration as plain data with every secret masked, safe to print: the secret
    keys, any key of a free-form table that names a secret, and the password inside any
    URL (``user:password@host``, or a ``password=`` query parameter)."""
    out: dict[str, Any] = {}
    for section, body in config.values.items():
        out[section] = {}
        for key, value in body.items():
            if (section, key) in SECRET_KEYS:
                value = MASK if value else ""
            else:
                value = masked_value(key, value)
            out[section][key] = value
    if config.streams:
        out[STREAMS] = [stream_dict(s) for s in config.streams]
    return out
