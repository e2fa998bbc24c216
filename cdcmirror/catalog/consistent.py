"""Reading several mirrored tables at one consistent point, through pyiceberg (DESIGN.md, "A
consistent database"). The mirror moves each table's tag and names the point in a table
property in one metadata commit, one table after another; a reader takes the tags only when
every table names the same point, and otherwise reads again (the tags are moving).

    from cdcmirror.catalog.consistent import consistent_snapshots
    read = consistent_snapshots(catalog, ["shop_mirror.orders", "shop_mirror.order_items"])
    orders = catalog.load_table("shop_mirror.orders").scan(
        snapshot_id=read.snapshots["shop_mirror.orders"]).to_arrow()

Spark readers use the snapshot ids the same way (``VERSION AS OF <id>``); ``VERSION AS OF
'cdc_consistent'`` on each table alone can mix two points while the tags move.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cdcmirror.exceptions import CdcMirrorError
from cdcmirror.mirror.consistent_point import Point, lag_seconds, same_point
from cdcmirror.table_properties import POINT_PROPERTY

DEFAULT_TAG = "cdc_consistent"


@dataclass(frozen=True)
class ConsistentRead:
    """The tables' snapshots at one consistent point."""

    point: Point
    snapshots: dict[str, int]  # table identifier -> snapshot id at the point

    def lag_seconds(self, now: float | None = None) -> float:
        """How long ago the point's transaction committed at the source."""
        return lag_seconds(self.point, int((time.time() if now is None else now) * 1000))


def _named(catalog: Any, identifier: str, tag: str) -> tuple[str | None, int | None]:
    """The point a table names and the snapshot its tag names, from one metadata version."""
    metadata = catalog.load_table(identifier).metadata
    ref = metadata.refs.get(tag)
    return metadata.properties.get(POINT_PROPERTY), (ref.snapshot_id if ref else None)


def consistent_snapshots(
    catalog: Any,
    identifiers: Sequence[str],
    tag: str = DEFAULT_TAG,
    attempts: int = 20,
    wait: float = 0.5,
) -> ConsistentRead:
    """Each table's snapshot at the newest point every table names; read again (``attempts``
    times, ``wait`` seconds apart) while the tags move. Raises when the tables never name
    one point (a table without the tag: the mirror has not proven a point yet, or the table
    is not mirrored with ``mirror.consistent_tag``)."""
    named: list[tuple[str | None, int | None]] = []
    for attempt in range(attempts):
        named = [_named(catalog, identifier, tag) for identifier in identifiers]
        texts = [text if snapshot is not None else None for text, snapshot in named]
        if all(text is None for text in texts):
            break  # no table has a point: the mirror has not proven one
        if same_point(texts):
            text = texts[0]
            assert text is not None
            ids = {i: int(s) for i, (_, s) in zip(identifiers, named, strict=True) if s is not None}
            return ConsistentRead(Point.parse(text), ids)
        if attempt + 1 < attempts:
            time.sleep(wait)
    missing = [
        i for i, (text, s) in zip(identifiers, named, strict=True) if text is None or s is None
    ]
    if missing:
        why = f"{', '.join(missing)} carry no tag {tag!r} with its point yet"
    else:
        why = "the tables name different points (the mirror is moving the tags; try again)"
    raise CdcMirrorError(
        f"no consistent point of {', '.join(identifiers)}: {why}. The mirror job sets the tag "
        "when mirror.consistent_tag names it and a source transaction completes"
    )
