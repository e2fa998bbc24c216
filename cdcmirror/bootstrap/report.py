"""How a bootstrap result is shown: a readable summary, or JSON with the full mapping. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdcmirror.bootstrap.plan import DRIFT_ADVICE, TablePlan
from cdcmirror.source_model import SourceCatalog


@dataclass
class ConnectorResult:
    name: str
    action: str  # "create", "update", "unchanged" or "skipped"
    config: dict[str, Any]  # masked
    state: str | None = None


@dataclass
class BootstrapResult:
    catalog: SourceCatalog
    plans: list[TablePlan]
    connector: ConnectorResult | None
    dry_run: bool
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def drift(self) -> list[TablePlan]:
        return [p for p in self.plans if p.drift]


def table_json(plan: TablePlan) -> dict[str, Any]:
    d = plan.desired
    return {
        "source": d.source.qualified,
        "iceberg": d.identifier,
        "mode": d.mode,
        "key": list(d.key),
        "key_source": d.source.key_source,
        "partitioned_source": d.source.partitioned,
        "partition": f"bucket({d.partition.buckets}, {d.partition.column})"
        if d.partition
        else None,
        "action": plan.action,
        "changes": plan.changes(),
        "drift": plan.drift,
        "columns": [
            {
                "source": m.source,
                "source_type": m.source_type,
                **({"domain": m.domain} if m.domain else {}),
                "iceberg": m.source,
                "iceberg_type": m.iceberg_type,
                "carrier": m.carrier,
                "required": m.required,
            }
            for m in d.mappings
        ],
        "cdc_columns": [
            {"iceberg": c.name, "iceberg_type": c.type}
            for c in d.columns
            if c.name not in {m.source for m in d.mappings}
        ],
    }


def result_json(result: BootstrapResult) -> dict[str, Any]:
    c = result.catalog
    return {
        "dry_run": result.dry_run,
        "source": {
            "dialect": c.dialect,
            "flavor": c.flavor,
            "server_version": c.server_version,
            "database": c.database,
            "user": c.user,
            "skipped_tables": list(c.skipped),
        },
        "tables": [table_json(p) for p in result.plans],
        "connector": None
        if result.connector is None
        else {
            "name": result.connector.name,
            "action": result.connector.action,
            "state": result.connector.state,
            "config": result.connector.config,
        },
        "drift": bool(result.drift),
        "timings_seconds": {k: round(v, 3) for k, v in result.timings.items()},
    }


def result_text(result: BootstrapResult) -> str:
    c = result.catalog
    verb = "would" if result.dry_run else "did"
    lines = [
        f"source: {c.flavor} {c.server_version.split()[0]} database {c.database!r} "
        f"as {c.user!r}: {len(result.plans)} tables"
        + (f" ({len(c.skipped)} without a key skipped)" if c.skipped else "")
    ]
    counts: dict[str, int] = {}
    for p in result.plans:
        counts[p.action] = counts.get(p.action, 0) + 1
    lines.append(f"iceberg ({verb}): " + ", ".join(f"{n} {a}" for a, n in sorted(counts.items())))
    for p in result.plans:
        d = p.desired
        if p.action == "unchanged" and not p.drift:
            continue
        key = ", ".join(d.key) if d.key else "none: append-only"
        lines.append(
            f"  {p.action:<9} {d.source.qualified} -> {d.identifier}  "
            f"({len(d.mappings)} columns, key {key})"
        )
        lines.extend(f"      {change}" for change in p.changes())
        lines.extend(f"      DRIFT: {msg}" for msg in p.drift)
    if result.connector is not None:
        rc = result.connector
        state = f", {rc.state}" if rc.state else ""
        lines.append(f"connector ({verb}): {rc.action} {rc.name}{state}")
        if result.dry_run:
            width = max(len(k) for k in rc.config)
            lines.extend(f"    {k:<{width}} = {v}" for k, v in rc.config.items())
    if result.drift:
        lines.append(f"drift in {len(result.drift)} table(s). {DRIFT_ADVICE}.")
    return "\n".join(lines)
