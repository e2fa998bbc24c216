"""How a maintenance run is shown: files and sizes before and after, per table. Pure."""

from __future__ import annotations

from typing import Any

from cdcmirror.maintain.run import FileCounts, TableMaintenance


def _mb(n: int) -> str:
    return f"{n / 1_048_576:.1f} MB"


def _side(c: FileCounts) -> str:
    return (
        f"{c.data_files} data ({_mb(c.data_bytes)}) + {c.delete_files} delete "
        f"({_mb(c.delete_bytes)}), {c.snapshots} snapshots"
    )


def result_text(results: list[TableMaintenance]) -> str:
    lines = []
    for r in results:
        cut = r.before.files / r.after.files if r.after.files else float(r.before.files or 1)
        lines.append(f"{r.table}")
        lines.append(f"  before  {_side(r.before)}")
        lines.append(f"  after   {_side(r.after)}  ({cut:.1f}x fewer files)")
        lines.append(
            f"  rewrote {r.rewritten_data_files} data and {r.rewritten_delete_files} delete "
            f"files; expired {r.expired_snapshots} snapshots; removed {r.orphans_removed} "
            "orphan files"
            + (f"; pruned {r.tombstones_pruned} tombstones" if r.tombstones_pruned else "")
        )
    return "\n".join(lines)


def result_json(results: list[TableMaintenance]) -> list[dict[str, Any]]:
    return [
        {
            "table": r.table,
            "before": vars(r.before) | {"files": r.before.files},
            "after": vars(r.after) | {"files": r.after.files},
            "rewritten_data_files": r.rewritten_data_files,
            "rewritten_delete_files": r.rewritten_delete_files,
            "expired_snapshots": r.expired_snapshots,
            "orphans_removed": r.orphans_removed,
            "tombstones_pruned": r.tombstones_pruned,
        }
        for r in results
    ]
