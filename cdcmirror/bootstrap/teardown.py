"""What ``cdcmirror teardown`` removes, as plain data. Pure.

Always: the Debezium connector and, on PostgreSQL, its replication slot (an inactive slot
holds WAL until the source's disk is full). On request: the Kafka topics, the streaming
checkpoint and the Iceberg tables (the mirrored data itself).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    kind: str  # connector, slot, signal, topic, checkpoint, tables
    target: str
    note: str = ""

    def line(self) -> str:
        return f"{self.kind:<10} {self.target}" + (f"  ({self.note})" if self.note else "")


@dataclass(frozen=True)
class TeardownFacts:
    connector: str | None  # registered connector name, None when there is none
    slot: str | None  # PostgreSQL slot name when it exists
    signal_table: str | None
    topics: tuple[str, ...]
    checkpoint: str | None  # the checkpoint (a directory or s3a:// URL) when it exists
    namespaces: tuple[str, ...]  # Iceberg namespaces that exist (mirror, internal)


def plan_teardown(facts: TeardownFacts, topics: bool, checkpoint: bool, tables: bool) -> list[Step]:
    """The steps, in the order they run: the connector first (nothing new arrives), the
    slot once the connector let go of it, then what was asked for.

    >>> facts = TeardownFacts("cdcmirror-shop", "cdcmirror_shop", None, ("shop.public.a",),
    ...     "/x/ckpt", ("shop_mirror",))
    >>> [s.kind for s in plan_teardown(facts, topics=True, checkpoint=False, tables=False)]
    ['connector', 'slot', 'topic']
    """
    steps = []
    if facts.connector:
        steps.append(Step("connector", facts.connector, "Kafka Connect, with its offsets"))
    if facts.slot:
        steps.append(Step("slot", facts.slot, "PostgreSQL replication slot and the WAL it holds"))
    if facts.signal_table:
        steps.append(Step("signal", facts.signal_table, "its rows; the table stays"))
    if topics:
        steps += [Step("topic", t) for t in facts.topics]
    if checkpoint and facts.checkpoint:
        steps.append(Step("checkpoint", facts.checkpoint))
    if tables:
        steps += [Step("tables", n, "namespace and every table in it") for n in facts.namespaces]
    return steps
