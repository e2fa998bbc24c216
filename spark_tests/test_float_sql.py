"""Debezium's float32 values converted to an Iceberg ``float`` by the mirror's own Spark SQL
(``carriers.convert_sql``) on a local Spark: the JSON converter writes a float as its
shortest decimal text, which read as a double can lie past the largest float (3.4028235E38
for ``Float.MAX_VALUE``) and still be that float; only a double the cast would make
infinite is past the float's range (NULL, so a dead letter)."""

from __future__ import annotations

import math
import random
import struct
from typing import Any

from cdcmirror.mirror.carriers import convert_sql, parse_carrier
from support.spark import SparkWorld

FLOAT_MAX = struct.unpack(">f", bytes.fromhex("7f7fffff"))[0]
ROUNDS_TO_INFINITY = float(2**128 - 2**103)  # half a float ulp past the largest float


def as_float32(x: float) -> float:
    """The float nearest ``x``, as Java's cast rounds it (``struct`` refuses past the largest)."""
    if abs(x) > FLOAT_MAX and math.isfinite(x):
        return math.copysign(FLOAT_MAX if abs(x) < ROUNDS_TO_INFINITY else math.inf, x)
    return float(struct.unpack(">f", struct.pack(">f", x))[0])


def shortest(f: float) -> str:
    """The shortest decimal text that reads back as the float32 ``f`` (as Java writes it)."""
    for digits in range(1, 10):
        text = f"{f:.{digits}g}"
        if as_float32(float(text)) == f:
            return text
    raise AssertionError(f)


def test_every_float_converts_to_itself_and_only_past_its_range_is_null(
    spark_world: SparkWorld,
) -> None:
    rng = random.Random(32)
    floats = [FLOAT_MAX, -FLOAT_MAX, 1.1, -0.0, 0.0, 1e-45, 1.17549435e-38, 16777217.0]
    floats += [as_float32(FLOAT_MAX * (1 - rng.random() * 1e-6)) for _ in range(50)]
    floats += [as_float32(rng.uniform(-1, 1) * 10 ** rng.randint(-38, 38)) for _ in range(200)]
    floats = [as_float32(f) for f in floats]
    rows: list[tuple[float, float | None]] = [(float(shortest(f)), f) for f in floats]
    rows += [(math.inf, math.inf), (-math.inf, -math.inf), (math.nan, math.nan)]
    rows += [(ROUNDS_TO_INFINITY, None), (-ROUNDS_TO_INFINITY, None), (1e39, None)]
    rows += [(math.nextafter(ROUNDS_TO_INFINITY, 0), FLOAT_MAX)]  # the cast rounds it down
    sql = convert_sql("w", parse_carrier("float32"), "float")
    frame: Any = spark_world.spark.createDataFrame(
        [(i, w) for i, (w, _) in enumerate(rows)], "i int, w double"
    )
    found = {r.i: r.v for r in frame.selectExpr("i", f"{sql} AS v").collect()}
    wrong = [(w, found[i], want) for i, (w, want) in enumerate(rows) if not same(found[i], want)]
    assert not wrong, wrong[:5]


def same(a: float | None, b: float | None) -> bool:
    both_nan = a is not None and b is not None and math.isnan(a) and math.isnan(b)
    return both_nan or a == b
