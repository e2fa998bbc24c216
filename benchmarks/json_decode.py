"""Benchmark: the decode of JSON-with-schemas events, from the whole value and from the
payload only (``schema_parts.payload_text_sql``), on one local Spark, without Kafka.

N events are made from a recorded Debezium insert (``support/fixtures/debezium/
postgresql-json.json``: 5 columns, about 3.3 KB an event, 2.7 KB of it the converter's
schema part), each with its own key, as Kafka-shaped rows, cached as the applier's first
look caches a batch. Each round decodes them both ways with the mirror's own SQL
(``spark/cdc/decode.decode_events``: the envelope, every column converted and checked), caches
the decoded rows and counts them, as a batch does. Five rounds; the first pays the JVM's
warm-up, the figures are the median of rounds 2 to 5.

    .venv/bin/python benchmarks/json_decode.py [N]
"""

from __future__ import annotations

import base64
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cdcmirror.config import load_config
from cdcmirror.mirror.schema_parts import PAYLOAD_MARK
from cdcmirror.spark.cdc.decode import decode_events, register_functions, with_utf8_check
from cdcmirror.spark.session import build_spark_session
from support.golden import FIXTURES, recorded_table

RECORDED = FIXTURES / "postgresql-json.json"


def events(spark: Any, value: str, n: int) -> Any:
    """N Kafka-shaped rows of ``value`` with the key ``"id":3`` replaced by each row's own."""
    head, tail = value.split('"id":3,', 1)
    rows = spark.range(n).selectExpr(
        "'bench.public.items' AS topic",
        "0 AS partition",
        "id AS offset",
        "timestamp_micros(1795000000000000 + id) AS timestamp",
        f"CAST(concat({_literal(head)}, '\"id\":', CAST(id AS STRING), ',', "
        f"{_literal(tail)}) AS BINARY) AS value",
        "CAST(NULL AS ARRAY<STRUCT<key: STRING, value: BINARY>>) AS headers",
    )
    cached = with_utf8_check(rows.repartition(2)).persist()
    cached.count()
    return cached


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def decode(rows: Any, table: Any, parts: list[str] | None) -> float:
    started = time.monotonic()
    decoded = decode_events(rows, table, True, False, parts=parts).persist()
    good = decoded.where("_cdc_error IS NULL").count()
    decoded.unpersist()
    assert good == rows.count(), good
    return time.monotonic() - started


def main(n: int) -> None:
    data = json.loads(RECORDED.read_text())
    record = next(r for r in data["records"] if r["value"] and b'"id":3,' in _raw(r["value"]))
    value = _raw(record["value"]).decode("utf-8")
    part = value[: value.index(PAYLOAD_MARK)]
    with tempfile.TemporaryDirectory() as tmp:
        spark = build_spark_session(load_config(environ={}, cwd=Path(tmp)), "bench-json-decode")
        register_functions(spark)
        rows = events(spark, value, n)
        table = recorded_table(data["table"])
        runs: dict[str, list[float]] = {"whole": [], "payload": []}
        for r in (1, 2, 3, 4, 5):
            runs["whole"].append(decode(rows, table, None))
            runs["payload"].append(decode(rows, table, [part]))
            print(", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items()), f"(round {r})")
        whole, payload = (statistics.median(runs[k][1:]) for k in ("whole", "payload"))
        print(f"\n{n:,} events of {len(value):,} bytes ({len(part):,} of schema), rounds 2-5")
        print("| decode | seconds | events/s |")
        print("| --- | --- | --- |")
        print(f"| the whole value | {whole:.2f} | {n / whole:,.0f} |")
        print(f"| the payload only | {payload:.2f} | {n / payload:,.0f} |")
        print(f"payload / whole: {payload / whole:.2f}")
        spark.stop()


def _raw(text: str) -> bytes:
    return base64.b64decode(text)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
