"""What differs between the source engines, asked of one object per engine. Pure.

Every other module takes the engine's name (``source.dialect`` in the config,
``MirrorTable.dialect`` in a table's properties) and asks ``dialects.of(name)`` instead of
comparing names: adding an engine is a module in this package.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from cdcmirror.source_model import SourceType


@dataclass(frozen=True)
class CanonicalColumn:
    """One column of the canonical row (``reconcile/canonical.py``)."""

    name: str
    family: str
    length: int | None = None  # character(n)
    scale: int = 0  # decimal(p,s)
    element: CanonicalColumn | None = None  # an array's elements (family ``array``)


class Dialect(ABC):
    """One source engine: its SQL words, its log, and how Debezium reports its changes."""

    name: ClassVar[str]  # as the config writes it
    flavors: ClassVar[tuple[str, ...]]  # the servers it covers (``SourceCatalog.flavor``)
    url_schemes: ClassVar[tuple[str, ...]]  # the source URL's scheme
    sqlalchemy_driver: ClassVar[str]
    default_port: ClassVar[int]
    jdbc_driver: ClassVar[str]
    session_init: ClassVar[str]  # run first in each session: dates and times in UTC
    # the log Debezium reads: PostgreSQL's WAL through a replication slot and a publication
    # (the initial load reads the slot's exported snapshot), or MySQL/MariaDB's binlog
    # (its settings and retained files decide what reaches Kafka)
    log: ClassVar[str]
    # a physical row address the initial load can split a table by (PostgreSQL's ``ctid``,
    # read by block ranges), or None (split by the key)
    row_address: ClassVar[str | None]
    toast_placeholders: ClassVar[bool]  # unchanged TOASTed values arrive as a placeholder
    julian_snapshot_dates: ClassVar[bool]  # snapshot reads carry old dates in Julian
    # MariaDB writes a UUID to the binlog without its trailing zero bytes: a UUID column is
    # read by cdcmirror's converter (bootstrap registers it, `jvm/java_parts.py`)
    uuid_converter: ClassVar[bool]
    source_fields_ddl: ClassVar[str]  # the Debezium ``source`` fields the position reads
    current_position_sql: ClassVar[str]
    # where a table's row estimate (``source/load_reads.estimated_rows``) comes from, and
    # how far it can be trusted: the initial load's ``auto`` choice follows it
    row_estimate: ClassVar[str]
    server_facts_sql: ClassVar[str]  # (version, database, user)

    @property
    def slot(self) -> bool:
        return self.log == "wal"

    @property
    def binlog(self) -> bool:
        return self.log == "binlog"

    # -- SQL words ---------------------------------------------------------------------
    @abstractmethod
    def quote(self, name: str) -> str:
        """An identifier."""

    def table_sql(self, qualified: str) -> str:
        """``schema.table`` (MySQL: ``database.table``), quoted."""
        schema, _, table = qualified.partition(".")
        return f"{self.quote(schema)}.{self.quote(table)}"

    @abstractmethod
    def string_literal(self, text: str) -> str:
        """A string literal holding ``text`` exactly."""

    @abstractmethod
    def jdbc_url(self, host: str, port: int, database: str) -> str: ...

    # -- the source and its log --------------------------------------------------------
    @abstractmethod
    def flavor(self, version: str) -> str:
        """postgresql, mysql or mariadb, from the server's version text."""

    @abstractmethod
    def position_text(self, rows: Sequence[Sequence[Any]]) -> str:
        """The current log position for a report, from ``current_position_sql``'s rows."""

    @abstractmethod
    def default_schema(self, database: str) -> str:
        """Where cdcmirror's own tables go by default (the signal table)."""

    @abstractmethod
    def grant_hint(self, table: str, user: str) -> str:
        """The statement that lets ``user`` read ``table``."""

    @abstractmethod
    def connector_database(self, database: str, schemas: Sequence[str]) -> str:
        """The connector's database setting for tables in ``schemas``."""

    # -- positions (``mirror/positions.py`` orders them) ----------------------------------
    @abstractmethod
    def source_order_sql(self, p: str) -> list[str]:
        """The source's own order of an event, from its Debezium payload ``p``."""

    @abstractmethod
    def loaded_source_order(self, start: tuple[int, ...]) -> list[int]:
        """The source order of a row the initial load read at the stream's ``start``."""

    @abstractmethod
    def position_label(self, position: Sequence[int]) -> str:
        """A stored ``_cdc_position`` as people write the source's position."""

    @property
    def position_length(self) -> int:
        """The phase and the source order: the leading part of a position from the source."""
        return 1 + len(self.source_order_sql("p"))

    # -- transactions (``mirror/transaction_metadata.py``) --------------------------------
    def transaction_id(self, raw: str) -> str:
        """A transaction's id as both its changes and its END record name it, from the id
        Debezium writes (MySQL and MariaDB: the GTID or binlog place, the same text)."""
        return raw

    def transaction_id_sql(self, column: str) -> str:
        """:meth:`transaction_id` in Spark SQL."""
        return column

    # -- the canonical row (``reconcile/canonical.py``) ---------------------------------
    @abstractmethod
    def canonical_family(self, source_type: SourceType, iceberg: str) -> str | None:
        """How a column is written in the canonical row; None when it is left out."""

    def canonical_text(self, col: CanonicalColumn) -> str:
        """The column's canonical text, as an SQL expression."""
        return self.value_text(col, self.quote(col.name))

    @abstractmethod
    def value_text(self, col: CanonicalColumn, value: str) -> str:
        """The canonical text of ``value`` (an SQL expression of ``col``'s type: the column,
        or an element of it), as an SQL expression."""

    @abstractmethod
    def chr_sql(self, code: int) -> str: ...

    @abstractmethod
    def hash32(self, text_sql: str) -> str:
        """The first 32 bits of MD5(text) as a non-negative integer expression."""

    def utf8(self, text_sql: str) -> str:
        """The text expression in UTF-8 (what the hash reads)."""
        return text_sql
