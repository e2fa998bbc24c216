"""A PostgreSQL event's last commit LSN read from ``source.sequence`` by the mirror's own
Spark SQL (``dialects/postgresql.first_of_sequence_sql``) on a local Spark: with string
functions for Debezium's own shape of the text, through a JSON parse for any other, and in
both cases the value ``get_json_object(sequence, '$[0]')`` gives."""

from __future__ import annotations

import random
from typing import Any

from cdcmirror.dialects.postgresql import first_of_sequence_sql, shaped_first_sql
from support.spark import SparkWorld


def debezium_shaped(rng: random.Random) -> list[str]:
    """Texts as Debezium writes them: two LSNs in quotes, or null, of 1 to 18 digits."""

    def item() -> str:
        if rng.random() < 0.2:
            return "null"
        return f'"{rng.randint(0, 10 ** rng.randint(1, 18) - 1)}"'

    texts = [f"[{item()},{item()}]" for _ in range(300)]
    return [*texts, '["999999999999999999","1"]', '["000123","5"]', "[null,null]"]


OTHER_SHAPES = [
    '["1234567890123456789","5"]',  # 19 digits: past the fast path (and a BIGINT near it)
    '["99999999999999999999","5"]',  # past a BIGINT
    '[ "12", "13" ]',
    '["12" ,"13"]',
    "[12,13]",
    '["-12","13"]',
    '["1.5","2"]',
    '["\\u0031\\u0032","13"]',  # JSON escapes: the parse reads 12
    '["12"]',
    '["12","13","14"]',
    "[]",
    "[null]",
    '["",""]',
    '["12","13"',
    '"12","13"]',
    "null",
    "",
    "garbage",
    '{"0": "12"}',
    '[["12"],"13"]',
    '["12", null]',
]


def test_the_first_item_is_what_a_json_parse_gives(spark_world: SparkWorld) -> None:
    texts = debezium_shaped(random.Random(20261205))
    rows = [(i, t) for i, t in enumerate([*texts, *OTHER_SHAPES])] + [(-1, None)]
    frame: Any = spark_world.spark.createDataFrame(rows, "i int, s string")
    found = frame.selectExpr(
        "i",
        "s",
        f"CAST({first_of_sequence_sql('s')} AS BIGINT) AS fast",
        "CAST(get_json_object(s, '$[0]') AS BIGINT) AS parsed",
        f"{shaped_first_sql('s')} <> '' AS shaped",
    ).collect()
    wrong = [(r.s, r.fast, r.parsed) for r in found if r.fast != r.parsed]
    assert not wrong, wrong[:5]
    # Debezium's texts take the string functions (else the test would compare the parse
    # with itself), and no other text does
    by_text = {r.s: r.shaped for r in found}
    assert all(by_text[t] for t in texts), [t for t in texts if not by_text[t]][:5]
    assert not any(by_text[t] for t in OTHER_SHAPES), [t for t in OTHER_SHAPES if by_text[t]]
    assert sum(1 for r in found if r.parsed is not None) > 250  # values, not only NULLs
