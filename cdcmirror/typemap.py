"""The one type mapping: source type -> Iceberg type, and how the Debezium event carries the
value. Pure. Documented, case by case, in ``docs/reference/type-mapping.md`` (its table is
the golden test of this module), and used both by ``bootstrap`` (table schemas) and by the mirror's
decoder (the target type of each value).

Iceberg types are written as strings (``long``, ``decimal(20,0)``, ``list<int>``,
``map<string,string>``) so this module stays free of any Iceberg library. The carrier is the
Debezium field schema: the Kafka Connect type, then the semantic schema name if there is one
(``int64 io.debezium.time.MicroTimestamp``); arrays are ``array<...>``.

The connector configs in ``connectors/`` set the modes this mapping relies on:
``decimal.handling.mode=precise``, ``time.precision.mode=adaptive_time_microseconds``,
``bigint.unsigned.handling.mode=precise``, ``interval.handling.mode=string`` and
``hstore.handling.mode=map``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cdcmirror.exceptions import UnsupportedTypeError
from cdcmirror.source_model import SourceType

MAX_DECIMAL_PRECISION = 38  # Iceberg's limit; wider decimals are mirrored as exact strings

DECIMAL = "bytes org.apache.kafka.connect.data.Decimal"
DATE = "int32 io.debezium.time.Date"
MICRO_TIME = "int64 io.debezium.time.MicroTime"
MILLI_TIMESTAMP = "int64 io.debezium.time.Timestamp"
MICRO_TIMESTAMP = "int64 io.debezium.time.MicroTimestamp"
ZONED_TIMESTAMP = "string io.debezium.time.ZonedTimestamp"
BITS = "bytes io.debezium.data.Bits"
UNKNOWN_CARRIER = "bytes"
MYSQL_GEOMETRIES = (  # besides point
    "geometry",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
    "geomcollection",
)  # include.unknown.datatypes: the value's text, as bytes


@dataclass(frozen=True)
class MappingOptions:
    """Settings that change the mapping (``[source]`` keys of the same names)."""

    unknown_types: str = "error"  # or "string"
    tinyint1_as_boolean: bool = True


@dataclass(frozen=True)
class TypeMapping:
    iceberg: str
    carrier: str


def _decimal(precision: int, scale: int) -> TypeMapping:
    if precision > MAX_DECIMAL_PRECISION or scale < 0 or scale > precision:
        return TypeMapping("string", DECIMAL)
    return TypeMapping(f"decimal({precision},{scale})", DECIMAL)


def _postgresql(t: SourceType) -> TypeMapping | None:
    n = t.name
    simple = {
        "smallint": TypeMapping("int", "int16"),
        "integer": TypeMapping("int", "int32"),
        "bigint": TypeMapping("long", "int64"),
        "oid": TypeMapping("long", "int64"),
        "boolean": TypeMapping("boolean", "boolean"),
        "real": TypeMapping("float", "float"),
        "double precision": TypeMapping("double", "double"),
        "money": TypeMapping("decimal(19,2)", DECIMAL),
        "bytea": TypeMapping("binary", "bytes"),
        "json": TypeMapping("string", "string io.debezium.data.Json"),
        "jsonb": TypeMapping("string", "string io.debezium.data.Json"),
        "uuid": TypeMapping("string", "string io.debezium.data.Uuid"),
        "xml": TypeMapping("string", "string io.debezium.data.Xml"),
        "tsvector": TypeMapping("string", "string io.debezium.data.Tsvector"),
        "ltree": TypeMapping("string", "string io.debezium.data.Ltree"),
        "hstore": TypeMapping("map<string,string>", "map<string,string>"),
        "date": TypeMapping("date", DATE),
        "time": TypeMapping("long", MICRO_TIME),
        "timetz": TypeMapping("string", "string io.debezium.time.ZonedTime"),
        "timestamptz": TypeMapping("timestamptz", ZONED_TIMESTAMP),
        "interval": TypeMapping("string", "string io.debezium.time.Interval"),
        "point": TypeMapping("binary", "struct io.debezium.data.geometry.Point"),
        "geometry": TypeMapping("binary", "struct io.debezium.data.geometry.Geometry"),
        "geography": TypeMapping("binary", "struct io.debezium.data.geometry.Geography"),
    }
    if n in simple:
        return simple[n]
    if n in ("character", "character varying", "text", "citext", "name", '"char"', "bpchar"):
        return TypeMapping("string", "string")
    if n in ("inet", "cidr", "macaddr", "macaddr8"):
        return TypeMapping("string", "string")
    if n in ("int4range", "int8range", "numrange", "tsrange", "tstzrange", "daterange"):
        return TypeMapping("string", "string")
    if n == "enum":
        return TypeMapping("string", "string io.debezium.data.Enum")
    if n == "bit":
        if (t.length or 1) == 1:
            return TypeMapping("boolean", "boolean")
        return TypeMapping("binary", BITS)
    if n == "bit varying":
        return TypeMapping("binary", BITS)
    if n == "numeric":
        if t.precision is None:
            return TypeMapping("string", "struct io.debezium.data.VariableScaleDecimal")
        return _decimal(t.precision, t.scale or 0)
    if n == "timestamp":
        if t.fsp is not None and t.fsp <= 3:
            return TypeMapping("timestamp", MILLI_TIMESTAMP)
        return TypeMapping("timestamp", MICRO_TIMESTAMP)
    return None


def _mysql(t: SourceType, options: MappingOptions) -> TypeMapping | None:
    n = t.name
    if n == "tinyint":
        if t.length == 1 and options.tinyint1_as_boolean and not t.unsigned:
            return TypeMapping("boolean", "int16")
        return TypeMapping("int", "int16")
    if n == "smallint":
        return TypeMapping("int", "int32" if t.unsigned else "int16")
    if n == "mediumint":
        return TypeMapping("int", "int32")
    if n == "int":
        return TypeMapping("long", "int64") if t.unsigned else TypeMapping("int", "int32")
    if n == "bigint":
        return TypeMapping("decimal(20,0)", DECIMAL) if t.unsigned else TypeMapping("long", "int64")
    if n == "bit":
        return (
            TypeMapping("boolean", "boolean")
            if (t.length or 1) == 1
            else TypeMapping("binary", BITS)
        )
    if n == "decimal":
        return _decimal(t.precision or 10, t.scale or 0)
    if n == "float":
        return TypeMapping("float", "float")
    if n == "double":
        return TypeMapping("double", "double")
    if n in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext"):
        return TypeMapping("string", "string")
    if n == "enum":
        return TypeMapping("string", "string io.debezium.data.Enum")
    if n == "set":
        return TypeMapping("string", "string io.debezium.data.EnumSet")
    if n == "json":
        return TypeMapping("string", "string io.debezium.data.Json")
    if n == "uuid":
        return TypeMapping("string", "string io.debezium.data.Uuid")
    if n in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
        return TypeMapping("binary", "bytes")
    if n == "date":
        return TypeMapping("date", DATE)
    if n == "time":
        return TypeMapping("long", MICRO_TIME)
    if n == "datetime":
        carrier = MILLI_TIMESTAMP if (t.fsp or 0) <= 3 else MICRO_TIMESTAMP
        return TypeMapping("timestamp", carrier)
    if n == "timestamp":
        return TypeMapping("timestamptz", ZONED_TIMESTAMP)
    if n == "year":
        return TypeMapping("int", "int32 io.debezium.time.Year")
    if n == "point":
        return TypeMapping("binary", "struct io.debezium.data.geometry.Point")
    if n in MYSQL_GEOMETRIES:
        return TypeMapping("binary", "struct io.debezium.data.geometry.Geometry")
    return None


# Types no setting can bring through: the connector itself fails on them.
_BLOCKED = {
    ("mysql", "inet4"): "Debezium 3.5's MariaDB DDL parser cannot read INET4 columns",
    ("mysql", "inet6"): "Debezium 3.5's MariaDB DDL parser cannot read INET6 columns",
}


def map_type(
    dialect: str, source_type: SourceType, options: MappingOptions | None = None
) -> TypeMapping | None:
    """The mapping of one source type, or None when cdcmirror does not know the type.

    >>> from cdcmirror.source.type_parsing import parse_mysql_type
    >>> map_type("mysql", parse_mysql_type("bigint(20) unsigned"))
    TypeMapping(iceberg='decimal(20,0)', carrier='bytes org.apache.kafka.connect.data.Decimal')
    """
    mapper = _MAPPERS.get(dialect)
    if mapper is None:
        raise ValueError(f"unknown dialect {dialect!r}")
    return mapper(source_type, options or MappingOptions())


def _postgresql_or_array(source_type: SourceType, options: MappingOptions) -> TypeMapping | None:
    """PostgreSQL's types, and one-dimensional arrays of them."""
    if source_type.name != "array":
        return _postgresql(source_type)
    if source_type.element is None or source_type.element.name == "array":
        return None
    element = _postgresql(source_type.element)
    if element is None:
        return None
    return TypeMapping(f"list<{element.iceberg}>", f"array<{element.carrier}>")


# each dialect's type rules (the dialect's name as ``dialects/`` has it)
_MAPPERS: dict[str, Callable[[SourceType, MappingOptions], TypeMapping | None]] = {
    "postgresql": _postgresql_or_array,
    "mysql": _mysql,
}


def map_column(
    dialect: str, where: str, source_type: SourceType, options: MappingOptions | None = None
) -> TypeMapping:
    """The mapping of the column ``where`` (``schema.table.column``); raise when unmapped."""
    options = options or MappingOptions()
    blocked = _BLOCKED.get((dialect, source_type.name))
    if blocked:
        raise UnsupportedTypeError(
            f"{where}: type {source_type.text} cannot be mirrored: {blocked}. Change the "
            "column type (e.g. to varchar(39)) or leave the table out of source.include"
        )
    mapping = map_type(dialect, source_type, options)
    if mapping is not None:
        return mapping
    if options.unknown_types == "string":
        return TypeMapping("string", UNKNOWN_CARRIER)
    raise UnsupportedTypeError(
        f"{where}: type {source_type.text} has no mapping to Iceberg. Set "
        'source.unknown_types = "string" to mirror such columns as their text, or leave '
        "the table out of source.include (docs/reference/type-mapping.md lists the supported types)"
    )
