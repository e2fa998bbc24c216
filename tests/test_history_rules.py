"""History's pure rules (``mirror/history.py``, ``bootstrap/plan.with_history``,
``reconcile/compare.HistoryCheck``); the SQL is run by ``spark_tests/test_history_apply.py``."""

from __future__ import annotations

import pytest

from cdcmirror.bootstrap.plan import DesiredTable, with_history
from cdcmirror.cdc_columns import CDC_COLUMNS, IcebergColumn
from cdcmirror.config import load_config
from cdcmirror.exceptions import ConfigError
from cdcmirror.mirror.history import NAMES, merge_sql, versions_sql
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable
from cdcmirror.reconcile.compare import DRIFT, IN_SYNC, HistoryCheck, TableCheck
from cdcmirror.source_model import SourceTable
from cdcmirror.table_properties import HISTORY_OF_PROPERTY, HISTORY_PROPERTY

TABLE = MirrorTable(
    "n.t", "s.p.t", "postgresql", "p.t", ("id",), "upsert",
    (MirrorColumn("id", "long", "int64"), MirrorColumn("note", "string", "string")),
)  # fmt: skip


def _desired(key: tuple[str, ...]) -> DesiredTable:
    src = SourceTable("p", "t", (), key)
    cols = (IcebergColumn("id", "long", bool(key)), IcebergColumn("note", "string"), *CDC_COLUMNS)
    return DesiredTable(src, "n", "t", cols, (), key, "upsert" if key else "append", None, {})


def test_a_history_table_is_made_beside_a_keyed_table() -> None:
    mirrored, history = with_history(_desired(("id",)), "_versions")
    assert mirrored.properties[HISTORY_PROPERTY] == "n.t_versions"
    assert history.properties[HISTORY_OF_PROPERTY] == "n.t"
    names = [c.name for c in history.columns]
    assert names == ["id", "note", *NAMES]
    assert history.key == () and history.sort == ("id",)
    assert not any(c.required for c in history.columns)


def test_a_keyless_table_is_refused_with_what_to_do() -> None:
    with pytest.raises(ConfigError, match=r"has no key.*leave it out of mirror\.history"):
        with_history(_desired(()), "__history")


def test_the_suffix_must_end_a_table_name(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "c.toml"
    path.write_text('[mirror]\nhistory = ["p.*"]\nhistory_suffix = "a.b"\n')
    with pytest.raises(ConfigError, match="history_suffix"):
        load_config(path, environ={})
    path.write_text('[mirror]\nhistory = ["p.*"]\n')
    assert load_config(path, environ={}).mirror.history_suffix == "__history"


def test_a_truncate_adds_its_clause_only_when_the_batch_has_one() -> None:
    source = versions_sql(TABLE, "f", [])
    assert "NOT MATCHED BY SOURCE" not in merge_sql(TABLE, "h", source, None)
    truncated = versions_sql(TABLE, "f", [([1, 5, 9, 0, 3], 1_000)])
    sql = merge_sql(TABLE, "h", truncated, ([1, 5, 9, 0, 3], 1_000))
    assert "WHEN NOT MATCHED BY SOURCE AND t._cdc_is_current" in sql
    assert "timestamp_micros(1000)" in sql


def test_reconcile_sees_a_history_that_disagrees() -> None:
    check = TableCheck("n.t", "p.t", "postgresql", "s.p.t", source_rows=3, mirror_rows=3)
    check.caught_up = True
    check.history = HistoryCheck("n.t__history", current=3, differing=0, broken=0)
    assert check.status == IN_SYNC
    check.history = HistoryCheck("n.t__history", current=2)
    assert check.status == DRIFT
    assert check.history.problem(3) == "history n.t__history: 2 current versions against 3 rows"
    check.history = HistoryCheck("n.t__history", current=3, differing=1, broken=2)
    assert "1 current versions and rows differ" in (check.history.problem(3) or "")
    assert check.status == DRIFT
