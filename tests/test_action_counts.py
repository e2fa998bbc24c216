"""The classification's counts read back by name: every action has its field."""

from __future__ import annotations

from dataclasses import fields

from cdcmirror.mirror.action_counts import ActionCounts, action_count_exprs
from cdcmirror.mirror.merge_sql import ACTIONS
from support.tables import NAME, make_table

TABLE = make_table(NAME)


def test_every_count_the_sql_names_is_a_field() -> None:
    names = [e.rsplit(" AS ", 1)[1] for e in action_count_exprs(TABLE)]
    assert names == [f.name for f in fields(ActionCounts)]
    assert set(ACTIONS) <= set(names)


def test_the_classified_changes_are_the_actions_only() -> None:
    values = {a: 1 for a in ACTIONS} | {"unknown": 5, "backwards": 7, "placeholders": 9}
    counts = ActionCounts.of(values)
    assert counts.classified == len(ACTIONS)
    assert (counts.unknown, counts.backwards, counts.placeholders) == (5, 7, 9)
