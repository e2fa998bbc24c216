"""PostgreSQL. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cdcmirror.dialects.base import CanonicalColumn, Dialect
from cdcmirror.source_model import SourceType

PUBLICATION = "cdcmirror"  # the publication the connector template reads

_TEXT = frozenset(
    {
        "character varying",
        "text",
        "citext",
        "name",
        '"char"',
        "enum",
        "json",
        "jsonb",
        "uuid",
        "xml",
        "inet",
        "cidr",
        "macaddr",
        "macaddr8",
        "ltree",
        "tsvector",
        "int4range",
        "int8range",
        "numrange",
        "tsrange",
        "tstzrange",
        "daterange",
    }
)
_FAMILIES = {
    "smallint": "int",
    "integer": "int",
    "bigint": "int",
    "oid": "int",
    "boolean": "bool",
    "bytea": "hex",
    "date": "days",
    "time": "time",
    "timestamp": "micros",
    "timestamptz": "micros",
    "real": "float",
    "double precision": "float",
    "money": "decimal",
    "timetz": "timetz",
    "interval": "interval",
    "bit varying": "bits",
    "hstore": "map",
    "point": "point",
}


class PostgreSQL(Dialect):
    """
    >>> d = PostgreSQL()
    >>> print(d.table_sql('s.a"b'))
    "s"."a""b"
    >>> d.jdbc_url("db", 5432, "shop")
    'jdbc:postgresql://db:5432/shop'
    >>> d.loaded_source_order((5000,)), d.position_length
    ([5000, 5000], 3)
    """

    name = "postgresql"
    flavors = ("postgresql",)
    url_schemes = ("postgresql", "postgres")
    sqlalchemy_driver = "postgresql+psycopg"
    default_port = 5432
    jdbc_driver = "org.postgresql.Driver"
    session_init = "SET TIME ZONE 'UTC'"
    log = "wal"
    row_address = "ctid"
    toast_placeholders = True
    julian_snapshot_dates = True
    uuid_converter = False
    source_fields_ddl = "lsn BIGINT, sequence STRING, snapshot STRING, ts_ms BIGINT"
    current_position_sql = "SELECT pg_current_wal_lsn()::text"
    row_estimate = "pg_class.reltuples: the planner's statistics as of the last ANALYZE"
    server_facts_sql = "SELECT current_setting('server_version'), current_database(), current_user"

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def string_literal(self, text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    def jdbc_url(self, host: str, port: int, database: str) -> str:
        return f"jdbc:postgresql://{host}:{port}/{database}"

    def flavor(self, version: str) -> str:
        return "postgresql"

    def position_text(self, rows: Sequence[Sequence[Any]]) -> str:
        return str(rows[0][0])

    def default_schema(self, database: str) -> str:
        return "public"

    def grant_hint(self, table: str, user: str) -> str:
        schema = table.split(".", 1)[0]
        return f"GRANT USAGE ON SCHEMA {schema} TO {user}; GRANT SELECT ON {table} TO {user}"

    def connector_database(self, database: str, schemas: Sequence[str]) -> str:
        return database

    def source_order_sql(self, p: str) -> list[str]:
        # source.sequence is [last commit LSN, LSN]: commit order first. The last commit is
        # null for the first transaction after a connector start (then the change's own LSN
        # stands in; a second writer of the same row waited for the first one's commit, so
        # its LSN is past that commit). Incremental snapshot reads carry no source.lsn.
        sequence = f"{p}.source.sequence"
        lsn = f"coalesce({p}.source.lsn, CAST(get_json_object({sequence}, '$[1]') AS BIGINT))"
        last_commit = f"coalesce(CAST({first_of_sequence_sql(sequence)} AS BIGINT), {lsn})"
        return [last_commit, lsn]

    def transaction_id(self, raw: str) -> str:
        # "<xid>:<LSN>": the change's own LSN in a change event, the commit's in the END
        return raw.split(":", 1)[0]

    def transaction_id_sql(self, column: str) -> str:
        return f"substring_index({column}, ':', 1)"

    def loaded_source_order(self, start: tuple[int, ...]) -> list[int]:
        (lsn,) = start  # the slot's LSN
        return [lsn, lsn]

    def position_label(self, position: Sequence[int]) -> str:
        """
        >>> PostgreSQL().position_label([1, 7, (1 << 32) + 0x1CAF2108, 0, 5])
        '1/1CAF2108'
        """
        if len(position) < 3:
            return "-"
        lsn = position[2]
        return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"

    def canonical_family(self, source_type: SourceType, iceberg: str) -> str | None:
        n = source_type.name
        if n in _TEXT:
            return "text"
        if n in ("character", "bpchar"):
            return "bpchar" if source_type.length else "text"
        if n == "numeric":
            if iceberg.startswith("decimal"):
                return "decimal"
            # Debezium sends a value without its trailing zeros when the column sets no scale
            return "number" if source_type.scale is None else "text"
        if n == "bit":  # bit(1) is mirrored as a boolean
            return "bool" if iceberg == "boolean" else "bits"
        if n == "array":
            return "array" if iceberg.startswith("list<") else None
        family = _FAMILIES.get(n)
        if family is None and iceberg == "string":
            return "text"  # a type mirrored as its text (source.unknown_types = "string")
        return family

    def value_text(self, col: CanonicalColumn, value: str) -> str:
        c = value
        micros = f"CAST(CAST(EXTRACT(EPOCH FROM {c}) * 1000000 AS bigint) AS text)"
        if col.family == "array" and col.element is not None:
            return self._array_text(col.element, c)
        return {
            "int": f"CAST({c} AS text)",
            "bool": f"CAST(CAST({c} AS integer) <> 0 AS text)",  # bit(1) too
            "decimal": f"CAST(CAST({c} AS numeric) AS text)",  # money too: no currency sign
            "number": f"CAST(trim_scale({c}) AS text)",
            # the type's output text, as pgoutput sends it (inet abbreviates a host's /32)
            "text": f"CASE WHEN {c} IS NULL THEN NULL ELSE format('%s', {c}) END",
            "bpchar": f"rpad(CAST({c} AS text), {col.length or 1})",
            "hex": f"encode({c}, 'hex')",
            "days": f"CAST({c} - DATE '1970-01-01' AS text)",
            "micros": micros,
            "time": micros,
            "timetz": (
                f"CAST(CAST(EXTRACT(EPOCH FROM CAST(({c} AT TIME ZONE 'UTC') AS time)) "
                "* 1000000 AS bigint) AS text)"
            ),
            "float": _float_text(f"CAST({c} AS double precision)"),
            "interval": _interval_text(c),
            "bits": f"ltrim(CAST({c} AS text), '0')",
            "map": _hstore_text(c),
            "point": f"'0101000000' || {_le_hex(f'{c}[0]')} || {_le_hex(f'{c}[1]')}",
        }[col.family]

    def _array_text(self, element: CanonicalColumn, c: str) -> str:
        """The element count, then each element's canonical text (NULL: the NULL mark),
        in order, joined by U+001D."""
        each = f"coalesce({self.value_text(element, 'e')}, chr(30))"
        joined = (
            f"(SELECT string_agg({each}, chr(29) ORDER BY o) "
            f"FROM unnest({c}) WITH ORDINALITY AS u(e, o))"
        )
        return (
            f"CASE WHEN {c} IS NULL THEN NULL "
            f"ELSE cardinality({c}) || ':' || coalesce({joined}, '') END"
        )

    def chr_sql(self, code: int) -> str:
        return f"chr({code})"

    def hash32(self, text_sql: str) -> str:
        return f"('x' || lpad(substr(md5({text_sql}), 1, 8), 16, '0'))::bit(64)::bigint"


def _float_text(x: str) -> str:
    """A float's exact value (``reconcile/canonical.py``: family ``float``)."""
    ax = f"abs({x})"
    e0 = f"floor(ln({ax}) / ln(2::double precision))"
    ratio = f"({ax} / power(2::double precision, {e0}))"
    e = f"({e0} + CASE WHEN {ratio} >= 2 THEN 1 WHEN {ratio} < 1 THEN -1 ELSE 0 END)"
    m = f"CAST({ax} / power(2::double precision, {e}) * 4503599627370496 AS bigint)"
    return (
        f"CASE WHEN {x} IS NULL THEN NULL WHEN {x} = 'NaN'::double precision THEN 'NaN' "
        f"WHEN {x} = 'Infinity'::double precision THEN 'Infinity' "
        f"WHEN {x} = '-Infinity'::double precision THEN '-Infinity' WHEN {x} = 0 THEN '0' "
        f"ELSE CASE WHEN {x} < 0 THEN '-' ELSE '' END || {m} || 'p' || CAST({e} AS bigint) END"
    )


def _interval_text(c: str) -> str:
    """An interval's months, days and microseconds (family ``interval``)."""
    months = f"CAST(EXTRACT(YEAR FROM {c}) * 12 + EXTRACT(MONTH FROM {c}) AS bigint)"
    days = f"CAST(EXTRACT(DAY FROM {c}) AS bigint)"
    micros = (
        f"CAST((EXTRACT(HOUR FROM {c}) * 3600 + EXTRACT(MINUTE FROM {c}) * 60) * 1000000 "
        f"+ EXTRACT(MICROSECONDS FROM {c}) AS bigint)"
    )
    return f"{months} || ':' || {days} || ':' || {micros}"


def _hstore_text(c: str) -> str:
    """An hstore's pair count, then its pairs sorted by key (code point order), each key
    and value joined by U+001C (a NULL value: the NULL mark), the pairs by U+001D."""
    pairs = (
        'string_agg(key || chr(28) || coalesce(value, chr(30)), chr(29) ORDER BY key COLLATE "C")'
    )
    return (
        f"CASE WHEN {c} IS NULL THEN NULL ELSE (SELECT count(*) || ':' || coalesce({pairs}, '') "
        f"FROM each({c})) END"
    )


def _le_hex(x: str) -> str:
    """The little-endian bytes of a float8, as lower-case hex (a point's WKB coordinate)."""
    h = f"encode(float8send({x}), 'hex')"
    return " || ".join(f"substr({h}, {i}, 2)" for i in range(15, 0, -2))


SEQUENCE_PATTERN = '^(null|"[0-9]{1,18}"),(null|"[0-9]{1,18}")$'
"""Inside its brackets, ``source.sequence`` as Debezium writes it: two LSNs as JSON text, each
a number of up to 18 digits in quotes (it fits a BIGINT) or null. No backslash: Spark reads
one in a SQL string as an escape unless ``spark.sql.parser.escapedStringLiterals`` is set."""


def first_of_sequence_sql(sequence: str) -> str:
    """The first item of ``source.sequence`` (a JSON array's text) as text, as
    ``get_json_object(sequence, '$[0]')`` gives it, but read with string functions when the
    text has Debezium's own shape (:data:`SEQUENCE_PATTERN`): a JSON parse per event is the
    larger part of reading a position (``benchmarks/position_sql.py``).
    Any other text is parsed as JSON, as before.

    >>> print(first_of_sequence_sql("s"))  # doctest: +NORMALIZE_WHITESPACE
    CASE regexp_extract(IF(startswith(s, '[') AND endswith(s, ']'),
    substr(s, 2, length(s) - 2), ''), '^(null|"[0-9]{1,18}"),(null|"[0-9]{1,18}")$', 1)
    WHEN '' THEN get_json_object(s, '$[0]') WHEN 'null' THEN NULL
    ELSE translate(regexp_extract(IF(startswith(s, '[') AND endswith(s, ']'),
    substr(s, 2, length(s) - 2), ''), '^(null|"[0-9]{1,18}"),(null|"[0-9]{1,18}")$', 1),
    '"', '') END
    """
    first = shaped_first_sql(sequence)
    return (
        f"CASE {first} WHEN '' THEN get_json_object({sequence}, '$[0]') WHEN 'null' THEN NULL "
        f"ELSE translate({first}, '\"', '') END"
    )


def shaped_first_sql(sequence: str) -> str:
    """The first item of ``source.sequence`` as its text has it (``null`` or digits in
    quotes) when the text has Debezium's shape (:data:`SEQUENCE_PATTERN`), else ''."""
    inner = f"IF(startswith({sequence}, '[') AND endswith({sequence}, ']'), "
    inner += f"substr({sequence}, 2, length({sequence}) - 2), '')"
    return f"regexp_extract({inner}, '{SEQUENCE_PATTERN}', 1)"
