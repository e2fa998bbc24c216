"""MySQL and MariaDB. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cdcmirror.dialects.base import CanonicalColumn, Dialect
from cdcmirror.source_model import SourceType
from cdcmirror.typemap import MYSQL_GEOMETRIES

_TEXT = frozenset(
    {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json", "uuid"}
)
_FAMILIES = {
    "smallint": "int",
    "mediumint": "int",
    "int": "int",
    "bigint": "int",
    "year": "int",
    "decimal": "decimal",
    "binary": "hex",
    "varbinary": "hex",
    "tinyblob": "hex",
    "blob": "hex",
    "mediumblob": "hex",
    "longblob": "hex",
    "date": "days",
    "datetime": "micros",
    "timestamp": "micros",
    "time": "time",
    "float": "float",
    "double": "float",
    "point": "geometry",
    **{name: "geometry" for name in MYSQL_GEOMETRIES},
}


class MySQL(Dialect):
    """
    >>> d = MySQL()
    >>> d.table_sql("shop.a`b")
    '`shop`.`a``b`'
    >>> print(d.string_literal("it's a \\\\ backslash"))
    'it''s a \\\\ backslash'
    >>> d.jdbc_url("db", 3306, "shop")
    'jdbc:mysql://db:3306/shop?permitMysqlScheme'
    >>> d.loaded_source_order((2, 1234)), d.position_length
    ([2, 1234, 0], 4)
    """

    name = "mysql"
    flavors = ("mysql", "mariadb")
    url_schemes = ("mysql", "mariadb")
    sqlalchemy_driver = "mysql+pymysql"
    default_port = 3306
    # MariaDB Connector/J under the jdbc:mysql: scheme, so Spark picks its MySQL dialect
    jdbc_driver = "org.mariadb.jdbc.Driver"
    session_init = "SET time_zone = '+00:00'"
    log = "binlog"
    row_address = None
    toast_placeholders = False
    julian_snapshot_dates = False
    uuid_converter = True
    source_fields_ddl = "file STRING, pos BIGINT, row INT, snapshot STRING, ts_ms BIGINT"
    current_position_sql = "SHOW MASTER STATUS"
    row_estimate = (
        "information_schema.TABLES.TABLE_ROWS: InnoDB's sampled estimate, which can differ "
        "between runs"
    )
    server_facts_sql = "SELECT VERSION(), DATABASE(), SUBSTRING_INDEX(CURRENT_USER(), '@', 1)"

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def string_literal(self, text: str) -> str:
        return "'" + text.replace("'", "''").replace("\\", "\\\\") + "'"

    def jdbc_url(self, host: str, port: int, database: str) -> str:
        return f"jdbc:mysql://{host}:{port}/{database}?permitMysqlScheme"

    def flavor(self, version: str) -> str:
        return "mariadb" if "mariadb" in version.lower() else "mysql"

    def position_text(self, rows: Sequence[Sequence[Any]]) -> str:
        return f"{rows[0][0]}:{rows[0][1]}" if rows else "-"

    def default_schema(self, database: str) -> str:
        return database

    def grant_hint(self, table: str, user: str) -> str:
        database = table.split(".", 1)[0]
        return f"GRANT SELECT ON `{database}`.* TO '{user}'@'<host>'"

    def connector_database(self, database: str, schemas: Sequence[str]) -> str:
        return ",".join(sorted(set(schemas)))

    def source_order_sql(self, p: str) -> list[str]:
        # binlog file number, offset in it, row of the event
        file_index = f"CAST(substring_index({p}.source.file, '.', -1) AS BIGINT)"
        return [file_index, f"{p}.source.pos", f"CAST({p}.source.row AS BIGINT)"]

    def loaded_source_order(self, start: tuple[int, ...]) -> list[int]:
        file_index, pos = start
        return [file_index, pos, 0]

    def position_label(self, position: Sequence[int]) -> str:
        if len(position) < 4:
            return "-"
        return f"binlog #{position[1]} pos {position[2]} row {position[3]}"

    def canonical_family(self, source_type: SourceType, iceberg: str) -> str | None:
        n = source_type.name
        if n in ("tinyint", "bit"):  # tinyint(1) and bit(1) may be mirrored as booleans
            if iceberg == "boolean":
                return "bool"
            return "int" if n == "tinyint" else "bits"
        if n in _TEXT:
            return "text"
        family = _FAMILIES.get(n)
        if family is None and iceberg == "string":
            return "text"  # a type mirrored as its text (source.unknown_types = "string")
        return family

    def value_text(self, col: CanonicalColumn, value: str) -> str:
        """The session must run with ``time_zone = '+00:00'`` (``session_init``)."""
        c = value
        return {
            "int": f"CAST({c} AS CHAR)",
            "bool": f"CASE WHEN {c} IS NULL THEN NULL WHEN {c} <> 0 THEN 'true' ELSE 'false' END",
            "decimal": f"CAST({c} AS CHAR)",
            "text": f"CAST({c} AS CHAR)",
            "bpchar": f"CAST({c} AS CHAR)",
            "hex": f"LOWER(HEX({c}))",
            "days": f"CAST(DATEDIFF({c}, '1970-01-01') AS CHAR)",
            "micros": f"CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {c}) AS CHAR)",
            "time": f"CAST(CAST(ROUND(TIME_TO_SEC({c}) * 1000000) AS SIGNED) AS CHAR)",
            "float": _float_text(c),
            "bits": f"TRIM(LEADING '0' FROM BIN({c} + 0))",
            # the value without the 4 bytes of its SRID: the WKB Debezium sends
            "geometry": f"LOWER(HEX(SUBSTRING({c}, 5)))",
        }[col.family]

    def chr_sql(self, code: int) -> str:
        return f"CHAR({code})"

    def hash32(self, text_sql: str) -> str:
        return f"CAST(CONV(SUBSTRING(MD5({text_sql}), 1, 8), 16, 10) AS UNSIGNED)"

    def utf8(self, text_sql: str) -> str:
        return f"CONVERT({text_sql} USING utf8mb4)"


def _float_text(x: str) -> str:
    """A float's exact value (``reconcile/canonical.py``: family ``float``); MySQL and
    MariaDB store no NaN or infinity."""
    ax = f"ABS({x})"
    e0 = f"FLOOR(LOG2({ax}))"
    ratio = f"({ax} / POW(2, {e0}))"
    e = f"({e0} + CASE WHEN {ratio} >= 2 THEN 1 WHEN {ratio} < 1 THEN -1 ELSE 0 END)"
    m = f"CAST({ax} / POW(2, {e}) * 4503599627370496 AS UNSIGNED)"
    return (
        f"CASE WHEN {x} IS NULL THEN NULL WHEN {x} = 0 THEN '0' ELSE CONCAT(IF({x} < 0, '-', ''), "
        f"CAST({m} AS CHAR), 'p', CAST(CAST({e} AS SIGNED) AS CHAR)) END"
    )
