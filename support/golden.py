"""The recorded Debezium events (``fixtures/debezium/``, made by ``record_golden.py`` from
a real connector) as Spark's Kafka source gives them, and the tables they were recorded
from."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from cdcmirror.mirror.spec import MirrorColumn, MirrorTable

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "debezium"


KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset bigint, "
    "timestamp timestamp, timestampType int, headers array<struct<key: string, value: binary>>"
)


def recorded_table(spec: dict[str, Any]) -> MirrorTable:
    return MirrorTable(
        **{
            **spec,
            "key": tuple(spec["key"]),
            "columns": tuple(MirrorColumn(**c) for c in spec["columns"]),
            "truncated_at": tuple(spec["truncated_at"]),
        }
    )


def kafka_records(spark: Any, records: list[dict[str, Any]]) -> Any:
    """The records as Spark's Kafka source gives them."""
    from datetime import UTC, datetime

    def raw(text: str | None) -> bytes | None:
        return None if text is None else base64.b64decode(text)

    rows = [
        (
            raw(r["key"]),
            raw(r["value"]),
            r["topic"],
            r["partition"],
            r["offset"],
            datetime.fromtimestamp(r["timestamp_ms"] / 1000, tz=UTC),
            0,
            [(k, raw(v)) for k, v in r["headers"]],
        )
        for r in records
    ]
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


def text(value: Any) -> str | None:
    return None if value is None else str(value)
