"""``[[streams]]`` entries of the config, validated into ``StreamSpec``. Pure.

    [[streams]]
    topic = "clicks"                 # or topic_pattern = "clicks\\..*" (a Java regex)
    table = "clicks"                 # in iceberg.namespace, or "namespace.table"
    format = "json"                  # or "avro" (Confluent wire format, kafka.schema_registry_url)
    schema = "infer"                 # json: a JSON Schema file or "infer"; avro: a subject
    partition = "day(event_time)"    # optional: identity/year/month/day/hour/bucket(N, col)
    key_columns = ["user_id"]        # optional: keep the newest event per key (upsert)

Every key can be overridden by ``CDCMIRROR_STREAMS__<N>__<KEY>`` (N counts from 0).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdcmirror.exceptions import ConfigError

KEYS = {
    "topic": "str",
    "topic_pattern": "str",
    "table": "str",
    "format": "str",
    "schema": "str",
    "partition": "str",
    "key_columns": "list",
}
FORMATS = ("json", "avro")
INFER = "infer"
_PARTITION = re.compile(
    r"^(?:(identity|year|month|day|hour)\(\s*(\w+)\s*\)|bucket\(\s*(\d+)\s*,\s*(\w+)\s*\))$"
)
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


@dataclass(frozen=True)
class Partition:
    transform: str  # identity, year, month, day, hour or bucket
    column: str
    buckets: int = 0

    def sql(self) -> str:
        """The Spark SQL partition transform.

        >>> Partition("bucket", "user_id", 16).sql(), Partition("day", "ts").sql()
        ('bucket(16, `user_id`)', 'days(`ts`)')
        """
        col = f"`{self.column}`"
        if self.transform == "bucket":
            return f"bucket({self.buckets}, {col})"
        if self.transform == "identity":
            return col
        return f"{self.transform}s({col})"


@dataclass(frozen=True)
class StreamSpec:
    index: int  # its place in [[streams]], for messages
    table: str  # as configured: "table" or "namespace.table"
    format: str
    schema: str
    topic: str = ""
    topic_pattern: str = ""
    partition: Partition | None = None
    key_columns: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"streams[{self.index}] ({self.topic or self.topic_pattern})"

    def identifier(self, namespace: str) -> str:
        """The Iceberg table: ``table`` in ``namespace`` unless it names its own."""
        return self.table if "." in self.table else f"{namespace}.{self.table}"

    def matches(self, topic: str) -> bool:
        r"""Whether ``topic`` is one of this stream's (a pattern matches whole names).

        >>> StreamSpec(0, "t", "json", "infer", topic_pattern="clicks\\..*").matches("clicks.eu")
        True
        """
        if self.topic:
            return topic == self.topic
        return re.fullmatch(self.topic_pattern, topic) is not None

    @property
    def infer(self) -> bool:
        return self.format == "json" and self.schema == INFER


def parse_partition(text: str, where: str) -> Partition | None:
    """
    >>> parse_partition("hour(ts)", "s")
    Partition(transform='hour', column='ts', buckets=0)
    >>> parse_partition("bucket(8, user)", "s")
    Partition(transform='bucket', column='user', buckets=8)
    >>> parse_partition("", "s") is None
    True
    """
    text = text.strip()
    if not text:
        return None
    m = _PARTITION.match(text)
    if m is None or (m[3] is not None and int(m[3]) < 1):
        raise ConfigError(
            f"{where}: partition {text!r}: write identity(col), year(col), month(col), "
            "day(col), hour(col) or bucket(N, col), or leave it out"
        )
    if m[1]:
        return Partition(m[1], m[2])
    return Partition("bucket", m[4], int(m[3]))


def _one(index: int, raw: Mapping[str, Any]) -> StreamSpec:
    where = f"streams[{index}]"
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; keys of [[streams]]: "
            f"{', '.join(sorted(KEYS))}"
        )
    for key, kind in KEYS.items():
        value = raw.get(key)
        if value is None:
            continue
        ok = isinstance(value, list) if kind == "list" else isinstance(value, str)
        if not ok or (kind == "list" and not all(isinstance(v, str) for v in value)):
            what = "a list of strings" if kind == "list" else "a string"
            raise ConfigError(f"{where}: {key} must be {what}, got {value!r}")
    topic, pattern = str(raw.get("topic") or ""), str(raw.get("topic_pattern") or "")
    if bool(topic) == bool(pattern):
        raise ConfigError(f"{where}: set exactly one of topic and topic_pattern")
    table = str(raw.get("table") or "")
    if not _TABLE.match(table):
        raise ConfigError(
            f"{where}: table {table!r} must be a name (letters, digits, _) or namespace.name"
        )
    fmt = str(raw.get("format") or "json")
    if fmt not in FORMATS:
        raise ConfigError(f"{where}: format {fmt!r} is not one of {', '.join(FORMATS)}")
    schema = str(raw.get("schema") or "")
    if fmt == "json" and not schema:
        raise ConfigError(f'{where}: schema is a JSON Schema file or "infer" for JSON events')
    if fmt == "avro" and (schema == INFER or not (schema or topic)):
        raise ConfigError(
            f"{where}: an Avro stream takes its schema from a registry subject: set schema "
            "to the subject (default <topic>-value)"
        )
    return StreamSpec(
        index=index,
        table=table,
        format=fmt,
        schema=schema or (f"{topic}-value" if topic else ""),
        topic=topic,
        topic_pattern=pattern,
        partition=parse_partition(str(raw.get("partition") or ""), where),
        key_columns=tuple(raw.get("key_columns") or ()),
    )


def parse_streams(raw: Sequence[Mapping[str, Any]], namespace: str) -> tuple[StreamSpec, ...]:
    """Every ``[[streams]]`` entry, validated; two streams of one table are an error, however
    they spell it (``clicks`` and ``<namespace>.clicks`` are one table in ``namespace``).

    >>> parse_streams([{"topic": "clicks", "table": "clicks", "schema": "infer"}], "n")[0].format
    'json'
    """
    specs = tuple(_one(i, r) for i, r in enumerate(raw))
    seen: dict[str, StreamSpec] = {}
    for s in specs:
        table = s.identifier(namespace)
        if table in seen:
            first = seen[table]
            raise ConfigError(
                f"streams[{first.index}] (table {first.table!r}) and {s.where} (table "
                f"{s.table!r}) both write table {table}; keep one of them, or name another "
                "table"
            )
        seen[table] = s
    return specs


def stream_dict(spec: StreamSpec) -> dict[str, Any]:
    """A spec as the config writes it (``config show``)."""
    out: dict[str, Any] = {"table": spec.table, "format": spec.format, "schema": spec.schema}
    if spec.topic:
        out["topic"] = spec.topic
    if spec.topic_pattern:
        out["topic_pattern"] = spec.topic_pattern
    if spec.partition is not None:
        p = spec.partition
        inner = f"{p.buckets}, {p.column}" if p.transform == "bucket" else p.column
        out["partition"] = f"{p.transform}({inner})"
    if spec.key_columns:
        out["key_columns"] = list(spec.key_columns)
    return out
