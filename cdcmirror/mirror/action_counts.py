"""What the classification of a table's batch came to: its changes per action
(``merge_sql.ACTIONS``), and those the MERGE cannot take as they are.

Pure SQL text: the counts are observed by the job that classifies the changes
(``spark/cdc/classified.py``), so no Spark job of its own reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from cdcmirror.mirror.merge_sql import ACTIONS
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast import placeholder_sql
from cdcmirror.mirror.toast_chain import unknown_sql


def action_count_exprs(table: MirrorTable) -> list[str]:
    """The counts over the classified changes, each ``expr AS name`` (``ActionCounts``)."""
    return [
        *(f"count_if(_cdc_action = '{a}') AS {a}" for a in ACTIONS),
        f"count_if({unknown_sql(table)}) AS unknown",
        "count_if(_cdc_backwards) AS backwards",
        f"count_if({placeholder_sql(table)}) AS placeholders",
    ]


@dataclass(frozen=True)
class ActionCounts:
    """The classified changes per action, as the applier reads them."""

    insert: int = 0
    update: int = 0
    delete: int = 0
    absent: int = 0  # a delete of a row the table no longer has: a tombstone only
    stale: int = 0  # older than what the table holds
    pruned: int = 0  # older than the pruned tombstones: not known, a dead letter
    unknown: int = 0  # an unchanged TOAST value known nowhere: a dead letter
    backwards: int = 0  # from a restarted source history: the mirror stops
    placeholders: int = 0  # changes that keep a value the table holds

    @classmethod
    def of(cls, values: Mapping[str, object]) -> ActionCounts:
        """The counts from an observation of ``action_count_exprs``.

        >>> ActionCounts.of({"insert": 2, "stale": None, "backwards": 0}).classified
        2
        """
        names = {f.name for f in fields(cls)}
        return cls(**{k: int(str(v or 0)) for k, v in values.items() if k in names})

    @property
    def classified(self) -> int:
        """The changes given an action (the rest of the applied events were superseded
        within the batch, or came before a truncate)."""
        return sum(getattr(self, a) for a in ACTIONS)
