"""The source engines: ``of(name)`` is the one object to ask what differs between them.

Adding an engine: a ``Dialect`` here (``base.py`` lists what it answers), then the parts
that are the engine's own rules or SDK calls: its type rules (``typemap._MAPPERS``), its
catalog reads (a ``source/<engine>.py``, called by ``source/discovery._look``), its
initial-load column reads (``load/plan._COLUMN_READS`` and a ``load/<engine>.py``), its row
estimate (``source/load_reads._ESTIMATED_ROWS``) and its connector template
(``connectors/``).

>>> of("postgresql").quote("a"), of("mysql").quote("a")
('"a"', '`a`')
>>> of("oracle")
Traceback (most recent call last):
ValueError: unknown source dialect 'oracle': postgresql or mysql (MySQL and MariaDB)
"""

from __future__ import annotations

from cdcmirror.dialects.base import CanonicalColumn, Dialect
from cdcmirror.dialects.mysql import MySQL
from cdcmirror.dialects.postgresql import PostgreSQL

__all__ = ["FLAVORS", "NAMES", "CanonicalColumn", "Dialect", "of", "of_flavor"]

_DIALECTS: dict[str, Dialect] = {d.name: d for d in (PostgreSQL(), MySQL())}
NAMES = tuple(_DIALECTS)
FLAVORS = tuple(f for d in _DIALECTS.values() for f in d.flavors)


def of(name: str) -> Dialect:
    """The dialect the config (or a table's properties) names."""
    try:
        return _DIALECTS[name]
    except KeyError:
        raise ValueError(
            f"unknown source dialect {name!r}: postgresql or mysql (MySQL and MariaDB)"
        ) from None


def of_flavor(flavor: str) -> Dialect:
    """The dialect of a server flavor (postgresql, mysql or mariadb).

    >>> of_flavor("mariadb").name
    'mysql'
    """
    for d in _DIALECTS.values():
        if flavor in d.flavors:
            return d
    raise ValueError(f"unknown source flavor {flavor!r}: postgresql, mysql or mariadb")
