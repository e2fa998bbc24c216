"""The row schemas a job applied to each table (JSON: the schema parts; Avro: the schema
ids, as text), while the table keeps the columns it had then: an event in one of them
decodes without evolving the table first, so a batch of one table in them is read from
Kafka once (``spark/cdc/plan.py``). Pure data; the job keeps it in its checkpoint
(``checkpoint_store.remembered_schemas``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import astuple, dataclass, field

from cdcmirror.mirror.spec import MirrorColumn, MirrorTable

MAX_KNOWN = 16  # row schemas a table's single read checks each event against, at most


@dataclass
class KnownSchemas:
    """Per table, the row schemas (``evolution.distinct_schemas_sql``'s texts or ids) of the
    events the job applied, while the table keeps the columns it had then. ``saved`` is
    told the JSON text (:meth:`to_json`) after each change: the job keeps it in its
    checkpoint, so a later run reads its first batch once too."""

    tables: dict[str, tuple[tuple[MirrorColumn, ...], frozenset[str]]] = field(default_factory=dict)
    saved: Callable[[str], None] | None = None
    # tables are applied on several threads: one learns (and saves) at a time
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def learn(self, table: MirrorTable, schemas: set[str], all_taken: bool) -> None:
        """After a batch's evolution: ``table`` as it now is took every one of ``schemas``
        (``all_taken``), or not (then none of its schemas counts as known)."""
        with self._lock:
            before = self.tables.get(table.identifier, ((), frozenset()))
            columns, known = before
            known = known if columns == table.columns else frozenset()
            known = known | schemas if all_taken else frozenset()
            self.tables[table.identifier] = (table.columns, known)
            if self.saved is not None and self.tables[table.identifier] != before:
                self.saved(self.to_json())

    def of(self, table: MirrorTable) -> frozenset[str] | None:
        """The known schemas of ``table`` as it is (None: none, or too many to check)."""
        columns, known = self.tables.get(table.identifier, ((), frozenset()))
        if columns != table.columns or not known or len(known) > MAX_KNOWN:
            return None
        return known

    def to_json(self) -> str:
        return json.dumps(
            {
                name: {"columns": [astuple(c) for c in columns], "schemas": sorted(known)}
                for name, (columns, known) in sorted(self.tables.items())
            }
        )

    @classmethod
    def from_json(cls, text: str) -> KnownSchemas:
        """What :meth:`to_json` wrote (nothing known from text that is not that).

        >>> t = MirrorTable("n.t", "s.t", "postgresql", "t", ("id",), "upsert",
        ...                 (MirrorColumn("id", "long", "int64"),))
        >>> k = KnownSchemas()
        >>> k.learn(t, {"{...}"}, True)
        >>> KnownSchemas.from_json(k.to_json()).of(t), KnownSchemas.from_json("[").of(t)
        (frozenset({'{...}'}), None)
        """
        try:
            raw = json.loads(text)
            return cls(
                {
                    str(name): (
                        tuple(MirrorColumn(*map(str, c)) for c in entry["columns"]),
                        frozenset(str(s) for s in entry["schemas"]),
                    )
                    for name, entry in raw.items()
                }
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return cls()
