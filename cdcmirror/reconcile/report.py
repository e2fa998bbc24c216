"""How a reconcile result is shown: a readable table, stable JSON, a Markdown report. Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cdcmirror.reconcile.compare import TableCheck, position_text

JSON_VERSION = 1


def _iso(t: datetime | None) -> str | None:
    return t.isoformat(timespec="seconds") if t else None


def _num(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _diff(n: int | None) -> str:
    return "-" if n is None else f"{n:+,}"


def table_json(c: TableCheck, now: datetime) -> dict[str, Any]:
    out: dict[str, Any] = {
        "table": c.identifier,
        "source": c.source,
        "status": c.status,
        "source_rows": c.source_rows,
        "mirror_rows": c.mirror_rows,
        "difference": c.difference,
        "position": position_text(c.flavor, c.position),
        "position_raw": c.position,
        "source_commit_time": _iso(c.source_ts),
        "events_behind": c.events_behind,
        "lag_seconds": round(c.lag_seconds(now), 1),
        "snapshot_id": c.snapshot_id,
        "snapshot_time": _iso(c.snapshot_time),
        "attempts": c.attempts,
        "error": c.error,
    }
    if c.history is not None:
        h = c.history
        out["history"] = {
            "table": h.table,
            "current_versions": h.current,
            "differing": h.differing,
            "broken_chains": h.broken,
            "problem": h.problem(c.mirror_rows),
        }
    if c.deep is not None:
        d = c.deep
        out["deep"] = {
            "buckets": d.buckets,
            "drifted_buckets": d.drifted_buckets,
            "changed_keys": d.changed,
            "missing_keys": d.missing,
            "extra_keys": d.extra,
            "keys_truncated": d.keys_truncated,
            "columns_not_compared": d.skipped_columns,
        }
    return out


def result_json(checks: list[TableCheck], now: datetime) -> dict[str, Any]:
    return {
        "version": JSON_VERSION,
        "checked_at": _iso(now),
        "in_sync": all(c.status == "in sync" for c in checks),
        "tables": [table_json(c, now) for c in checks],
    }


_HEAD = (
    "table",
    "status",
    "source rows",
    "mirror rows",
    "diff",
    "position",
    "commit time",
    "lag",
    "snapshot",
)


def _row(c: TableCheck, now: datetime) -> tuple[str, ...]:
    snapshot = f"{c.snapshot_id} @ {_iso(c.snapshot_time)}" if c.snapshot_id else "-"
    return (
        c.identifier,
        c.status,
        _num(c.source_rows),
        _num(c.mirror_rows),
        _diff(c.difference),
        position_text(c.flavor, c.position),
        _iso(c.source_ts) or "-",
        f"{c.lag_seconds(now):.0f}s" + (f" ({c.events_behind:,} back)" if c.events_behind else ""),
        snapshot,
    )


def _keys(label: str, keys: list[dict[str, str]]) -> list[str]:
    if not keys:
        return []
    shown = ", ".join("(" + ", ".join(f"{k}={v}" for k, v in key.items()) + ")" for key in keys)
    return [f"  {label} ({len(keys)}): {shown}"]


def _details(c: TableCheck) -> list[str]:
    lines: list[str] = []
    if c.error:
        lines.append(f"{c.identifier}: {c.error}")
    if c.history is not None and (problem := c.history.problem(c.mirror_rows)):
        lines.append(f"{c.identifier}: {problem}")
    d = c.deep
    if d is not None and (d.differs or d.skipped_columns):
        lines.append(f"{c.identifier}: {len(d.drifted_buckets)} of {d.buckets} buckets differ")
        lines += _keys("changed", d.changed)
        lines += _keys("missing from the mirror", d.missing)
        lines += _keys("extra in the mirror", d.extra)
        if d.keys_truncated:
            lines.append("  (more keys differ than listed; raise reconcile.max_keys)")
        if d.skipped_columns:
            lines.append("  not compared (no canonical text): " + ", ".join(d.skipped_columns))
    return lines


def result_text(checks: list[TableCheck], now: datetime) -> str:
    rows = [_HEAD] + [_row(c, now) for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEAD))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for c in checks:
        lines += _details(c)
    bad = [c for c in checks if c.status != "in sync"]
    lines.append(
        "all tables in sync"
        if not bad
        else f"{len(bad)} of {len(checks)} table(s) not in sync: "
        + ", ".join(f"{c.identifier} ({c.status})" for c in bad)
    )
    return "\n".join(lines)


def result_markdown(checks: list[TableCheck], now: datetime, source: str) -> str:
    """A report to attach to a ticket."""
    bad = [c for c in checks if c.status != "in sync"]
    lines = [
        f"# cdcmirror reconcile: {source}",
        "",
        f"Checked at {_iso(now)} UTC. "
        + ("**All tables in sync.**" if not bad else f"**{len(bad)} table(s) not in sync.**"),
        "",
        "| " + " | ".join(_HEAD) + " |",
        "|" + "---|" * len(_HEAD),
    ]
    for c in checks:
        lines.append("| " + " | ".join(v.replace("|", "\\|") for v in _row(c, now)) + " |")
    details = [line for c in checks for line in _details(c)]
    if details:
        lines += ["", "## Differences", "", "```", *details, "```"]
    lines += [
        "",
        "Counts exclude soft-deleted rows. A table is *lagging* when the mirror had not "
        "applied every event Kafka held when the check ended.",
        "",
    ]
    return "\n".join(lines)
