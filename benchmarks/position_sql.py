"""Benchmark: what a PostgreSQL event's position (``positions.position_sql``) costs the decode,
against the same position with its last commit LSN read from ``source.sequence`` by a JSON
parse (``get_json_object``, as before ``dialects/postgresql.first_of_sequence_sql``).

N generated events (a parsed envelope's ``source`` block in Debezium's shape, held in
memory), each expression written to Spark's ``noop`` sink alone, the fastest of three
runs, beside the Kafka offset alone (the floor of any one-column write). Local Spark on two
cores, no stack needed.

    .venv/bin/python benchmarks/position_sql.py [N]      # N defaults to 2000000
"""

from __future__ import annotations

import sys
from typing import Any

from benchmarks.decode_steps import noop_seconds
from cdcmirror.dialects.postgresql import first_of_sequence_sql
from cdcmirror.mirror.positions import position_sql

SOURCE = (
    "named_struct('source', named_struct('lsn', 1000 + id, 'sequence', "
    "to_json(array(CAST(900 + id AS STRING), CAST(1000 + id AS STRING))), "
    "'snapshot', CAST(NULL AS STRING), 'ts_ms', 1764900000000 + id), 'op', 'u') AS e"
)


def main() -> None:
    from pyspark.sql import SparkSession

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    spark: Any = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.ansi.enabled", "false")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    events = spark.range(n).selectExpr("0 AS partition", "id AS offset", SOURCE).cache()
    events.count()
    position = position_sql("postgresql", "e")
    parsed = "get_json_object(e.source.sequence, '$[0]')"
    variants = {
        "the Kafka offset alone": "offset",
        "the position (position_sql)": position,
        "the position, parsing the sequence": position.replace(
            first_of_sequence_sql("e.source.sequence"), parsed
        ),
    }
    print(f"{n:,} events, seconds (fastest of 3):")
    for name, sql in variants.items():
        print(f"  {name:34} {noop_seconds(events.selectExpr(sql), runs=3):.3f}")
    spark.stop()


if __name__ == "__main__":
    main()
