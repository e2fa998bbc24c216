"""How a bootstrap result is shown: a readable summary, or JSON with the full mapping. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdcmirror.bootstrap.plan import DRIFT_ADVICE, TablePlan
from cdcmirror.load.plan import LoadChoice
from cdcmirror.source_model import SourceCatalog
from cdcmirror.table_properties import HISTORY_PROPERTY


@dataclass
class ConnectorResult:
    name: str
    action: str  # "create", "update", "unchanged" or "skipped"
    config: dict[str, Any]  # masked
    state: str | None = None
    # source tables an already registered connector captures from now on: their rows from
    # before are in no topic, so their mirror tables are empty until loaded (`repair`)
    added: list[str] = field(default_factory=list)


@dataclass
class BootstrapResult:
    catalog: SourceCatalog
    plans: list[TablePlan]
    connector: ConnectorResult | None
    dry_run: bool
    timings: dict[str, float] = field(default_factory=dict)
    load: Any = None  # commands/initial_load.LoadReport when Spark loaded tables
    streams: list[Any] = field(default_factory=list)  # commands/streams.StreamPlan
    choice: LoadChoice | None = None  # how the rows of a new connector's tables come

    @property
    def stream_drift(self) -> list[Any]:
        return [s for s in self.streams if s.drift]

    @property
    def bad_rows(self) -> int:
        """Rows the initial load could not write (a value that does not convert)."""
        return int(self.load.bad_rows) if self.load is not None else 0

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
            "added": result.connector.added,
        },
        "streams": [s.as_json() for s in result.streams],
        "drift": bool(result.drift or result.stream_drift),
        "initial_load": load_json(result.choice, result.load),
        "timings_seconds": {k: round(v, 3) for k, v in result.timings.items()},
    }


def load_json(choice: LoadChoice | None, load: Any) -> dict[str, Any] | None:
    """How the rows came (``choice``; None: no connector was planned) and, when Spark loaded
    tables, what it loaded (``load``)."""
    if choice is None and load is None:
        return None
    out = choice.as_json() if choice is not None else {}
    if load is None:
        return {**out, "start": None, "tables": []}
    return {
        **out,
        "mode": load.mode,
        "estimated_rows": load.estimated_rows,
        "start": load.start,
        "tables": [
            {
                "iceberg": t.identifier,
                "rows": t.rows,
                "rows_not_loaded": t.bad,
                "example": t.example,
                "seconds": round(t.seconds, 3),
                "rows_per_s": round(t.rows / t.seconds) if t.seconds else None,
                "reads": t.reads,
            }
            for t in load.tables
        ],
    }


def load_lines(load: Any) -> list[str]:
    if load is None:
        return []
    lines = [f"initial load ({load.mode}): {load.start}"]
    for t in load.tables:
        rate = f"{t.rows / t.seconds:,.0f} rows/s" if t.seconds else "-"
        lines.append(
            f"  {t.identifier}: {t.rows:,} rows in {t.seconds:.1f} s ({rate}, {t.reads} reads)"
        )
        if t.bad:
            lines.append(
                f"      NOT LOADED: {t.bad:,} row(s) with a value that does not convert, e.g. "
                f"{t.example}; fix them at the source (the mirror then streams them) or see "
                "`cdcmirror reconcile --deep`"
            )
    return lines


def added_lines(result: BootstrapResult) -> list[str]:
    """What to run for the tables a registered connector captures from now on: their rows
    from before are loaded by no one else."""
    if result.connector is None or not result.connector.added:
        return []
    mirrors: dict[str, Any] = {}
    for p in result.plans:  # a table before its history table
        mirrors.setdefault(p.desired.source.qualified, p.desired)
    lines = []
    for source in result.connector.added:
        d = mirrors.get(source)
        if d is None:  # no mirror table planned for it: nothing to load
            continue
        # a re-load by Spark keeps no history versions and cannot tell a keyless table's
        # rows apart: Debezium's incremental snapshot reads those
        by_debezium = not d.key or HISTORY_PROPERTY in d.properties
        how = "snapshot" if by_debezium else "reload"
        lines.append(f"    cdcmirror repair --table {d.identifier} --method {how}")
    if not lines:
        return []
    head = (
        f"  {len(lines)} table(s) added to the registered connector; their rows from before "
        "are not loaded (the connector streams their changes from now on):"
    )
    return [head, *lines]


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
        lines.extend(added_lines(result))
        if result.dry_run:
            width = max(len(k) for k in rc.config)
            lines.extend(f"    {k:<{width}} = {v}" for k, v in rc.config.items())
    lines.extend(load_lines(result.load))
    if result.streams:
        lines.append(f"streams ({verb}): {len(result.streams)}")
        for s in result.streams:
            lines.extend(s.lines(result.dry_run))
    if result.stream_drift:
        lines.append(
            f"drift in {len(result.stream_drift)} stream table(s): a field's type changed; "
            "the mirror dead-letters events whose value does not fit the column"
        )
    if result.drift:
        lines.append(f"drift in {len(result.drift)} table(s). {DRIFT_ADVICE}.")
    return "\n".join(lines)
