"""``cdcmirror point``: the source's consistent point (``mirror.consistent_tag``), each
mirrored table's snapshot at it and its lag (``catalog/consistent.py``)."""

from __future__ import annotations

from typing import Any

from cdcmirror.commands.job_tables import cdc_tables
from cdcmirror.config import Config
from cdcmirror.exceptions import ConfigError


def point(config: Config, only: list[str] | None = None) -> dict[str, Any]:
    """The point as JSON-ready values: its transaction, source position, commit time, lag,
    and each table's snapshot id at it."""
    from cdcmirror.catalog import load_catalog
    from cdcmirror.catalog.consistent import consistent_snapshots

    tag = config.mirror.consistent_tag
    if not tag:
        raise ConfigError(
            "mirror.consistent_tag is empty: the mirror keeps no consistent point. Set it "
            "(e.g. cdc_consistent), run `cdcmirror bootstrap` (the connector then writes "
            "transaction metadata) and restart the mirror job"
        )
    catalog = load_catalog(config)
    tables = [t.identifier for t in cdc_tables(config, catalog, only, required=True)]
    read = consistent_snapshots(catalog, tables, tag)
    return {
        "tag": tag,
        "transaction": read.point.tx,
        "position": list(read.point.position),
        "commit_ms": read.point.commit_ms,
        "lag_seconds": round(read.lag_seconds(), 3),
        "snapshots": read.snapshots,
    }


def point_text(found: dict[str, Any]) -> str:
    """The point as lines for a terminal.

    >>> print(point_text({"tag": "t", "transaction": "7", "position": [1, 2, 3],
    ...     "commit_ms": 0, "lag_seconds": 1.5, "snapshots": {"ns.a": 42}}))
    consistent tag t at transaction 7, position [1, 2, 3], committed 1.5 s ago
      ns.a  snapshot 42
    """
    lines = [
        f"consistent tag {found['tag']} at transaction {found['transaction']}, position "
        f"{found['position']}, committed {found['lag_seconds']} s ago"
    ]
    width = max(len(t) for t in found["snapshots"])
    lines += [f"  {t:<{width}}  snapshot {s}" for t, s in sorted(found["snapshots"].items())]
    return "\n".join(lines)
