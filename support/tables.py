"""The one factory of the tests' mirrored tables: a ``MirrorTable`` keyed by ``id`` (a
``long``) unless told otherwise, with the columns given after it."""

from __future__ import annotations

from cdcmirror.mirror.spec import MirrorColumn, MirrorTable

ID = MirrorColumn("id", "long", "int64")
NAME = MirrorColumn("name", "string", "string")


def make_table(
    *columns: MirrorColumn | tuple[str, str, str],
    identifier: str = "ns.items",
    flavor: str = "postgresql",
    source: str | None = None,
    topic: str | None = None,
    key: tuple[str, ...] = ("id",),
    mode: str = "upsert",
    key_columns: tuple[MirrorColumn, ...] = (ID,),
) -> MirrorTable:
    """A table of ``key_columns`` (the ``id`` column by default) then ``columns``; its source
    is ``s.<table>`` and its topic ``src.<source>`` unless given."""
    name = identifier.rsplit(".", 1)[-1]
    source = source or f"s.{name}"
    rest = tuple(c if isinstance(c, MirrorColumn) else MirrorColumn(*c) for c in columns)
    return MirrorTable(
        identifier=identifier,
        topic=topic or f"src.{source}",
        flavor=flavor,
        source=source,
        key=key,
        mode=mode,
        columns=(*key_columns, *rest),
    )
