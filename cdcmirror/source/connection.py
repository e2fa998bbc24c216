"""Open the source database through SQLAlchemy, with errors a user can act on."""

from __future__ import annotations

import logging
from typing import Any

from cdcmirror import dialects
from cdcmirror.config.masking import mask_url_password
from cdcmirror.config.settings import Source
from cdcmirror.exceptions import ConfigError, ServiceUnavailableError, SourceError

logger = logging.getLogger(__name__)

_UNREACHABLE = (
    "connection refused",
    "can't connect",
    "timed out",
    "timeout expired",
    "could not translate host",
    "name or service not known",
    "no route to host",
    "network is unreachable",
)
_AUTH = ("password authentication failed", "access denied", "authentication failed")


def source_url(source: Source) -> Any:
    """The SQLAlchemy URL of the source with cdcmirror's driver and the configured password."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    dialect = source.dialect
    d = dialects.of(dialect)
    raw = source.url
    try:
        url = make_url(raw)
    except ArgumentError as exc:
        raise ConfigError(
            f"source.url {mask_url_password(raw)!r} is not a database URL; write it as "
            f"{d.url_schemes[0]}://USER@HOST:PORT/DATABASE"
        ) from exc
    scheme = url.drivername.split("+", 1)[0]
    if scheme not in d.url_schemes:
        raise ConfigError(
            f"source.url {mask_url_password(raw)!r} is a {scheme} URL but source.dialect is "
            f'{dialect!r}; make them agree (MariaDB uses dialect "mysql")'
        )
    if not url.database:
        raise ConfigError(
            f"source.url {mask_url_password(raw)!r} names no database; add /DATABASE at the end"
        )
    url = url.set(drivername=d.sqlalchemy_driver)
    password = str(source.password or "")
    if password:
        url = url.set(password=password)
    return url


def _scrub(message: str, secret: str | None) -> str:
    return message.replace(secret, "***") if secret else message


def open_engine(source: Source) -> Any:
    """An engine whose first connection succeeded; a refused connection is a clear error."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DBAPIError

    url = source_url(source)
    where = f"{url.host or 'localhost'}:{url.port or ''}".rstrip(":")
    # both psycopg and pymysql take connect_timeout, in seconds
    engine = create_engine(url, connect_args={"connect_timeout": 10})
    try:
        with engine.connect():
            pass
    except DBAPIError as exc:
        engine.dispose()
        detail = _scrub(
            str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc), url.password
        )
        lowered = detail.lower()
        shown = url.render_as_string(hide_password=True)
        if any(w in lowered for w in _UNREACHABLE):
            raise ServiceUnavailableError(
                f"the source database at {where} cannot be reached ({detail}); start it or fix "
                "source.url"
            ) from None
        if any(w in lowered for w in _AUTH):
            raise SourceError(
                f"the source database at {where} refused user {url.username!r} ({detail}); "
                "check the user in source.url and its password (CDCMIRROR_SOURCE__PASSWORD)"
            ) from None
        raise SourceError(f"cannot open the source database {shown}: {detail}") from None
    return engine
