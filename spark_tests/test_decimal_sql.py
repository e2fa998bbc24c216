"""Debezium's decimals (base64 big-endian two's complement unscaled bytes) converted by the
mirror's own Spark SQL (``carriers.convert_sql``) on a local Spark, against Python's exact
``Decimal``: 1 to 8 bytes through one signed 64-bit ``conv``, more through the two halves,
every byte length at its edges, signs, scales, values past the column's precision (NULL,
so a dead letter) and bytes that are no number."""

from __future__ import annotations

import base64
import random
from decimal import Decimal, localcontext
from typing import Any

import pytest

from cdcmirror.mirror.carriers import convert_sql, parse_carrier
from support.spark import SparkWorld


def wire(unscaled: int, extra: int = 0) -> str:
    """Base64 of the minimal two's complement bytes (Java's ``BigInteger.toByteArray``),
    with ``extra`` sign bytes in front (a longer encoding of the same number)."""
    size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1 + extra
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode("ascii")


def expected(unscaled: int, precision: int, scale: int) -> Decimal | None:
    """The exact value (a context of 100 digits: the default 28 would round 38-digit ones)."""
    with localcontext(prec=100):
        return Decimal(unscaled).scaleb(-scale) if abs(unscaled) < 10**precision else None


def cases(precision: int, rng: random.Random) -> list[tuple[int, int]]:
    edges = [0, 1, -1, 10**precision - 1, -(10**precision - 1), 10**precision, -(10**precision)]
    for bits in range(7, 127, 8):  # each byte length's first and last value, both signs
        edges += [2**bits - 1, 2**bits, -(2**bits), -(2**bits) - 1]
    edges += [rng.randrange(-(10**precision), 10**precision) for _ in range(200)]
    out = [(n, 0) for n in edges if n.bit_length() <= 127]
    out += [(n, rng.randrange(1, 4)) for n in edges[:40] if n.bit_length() <= 100]
    return out


@pytest.mark.parametrize("precision,scale", [(5, 3), (12, 2), (18, 0), (18, 18), (20, 0), (38, 10)])
def test_decimals_convert_exactly(spark_world: SparkWorld, precision: int, scale: int) -> None:
    rng = random.Random(precision * 100 + scale)
    rows = [(wire(n, extra), str(n)) for n, extra in cases(precision, rng)]
    carrier = parse_carrier(f"bytes org.apache.kafka.connect.data.Decimal({scale})")
    sql = convert_sql("w", carrier, f"decimal({precision},{scale})")
    frame: Any = spark_world.spark.createDataFrame(rows, "w string, n string")
    found = frame.selectExpr("n", f"{sql} AS v").collect()
    wrong = [
        (r.n, r.v, expected(int(r.n), precision, scale))
        for r in found
        if r.v != expected(int(r.n), precision, scale)
    ]
    assert not wrong, wrong[:5]
    assert len(found) == len(rows) > 200


def test_bytes_that_are_no_number_convert_to_null(spark_world: SparkWorld) -> None:
    carrier = parse_carrier("bytes org.apache.kafka.connect.data.Decimal(2)")
    sql = convert_sql("w", carrier, "decimal(12,2)")
    texts = ["", "not base64!", base64.b64encode(bytes(17)).decode("ascii")]
    frame = spark_world.spark.createDataFrame([(t,) for t in texts], "w string")
    assert [r.v for r in frame.selectExpr(f"{sql} AS v").collect()] == [None] * 3
