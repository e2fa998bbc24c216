"""Reconcile scenarios, the same for every source: in sync after a mirrored workload, no
false drift while a workload runs, drift found with its exact keys after the mirror is
changed behind its back."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from support import mirror_scenarios as sc
from support.bootstrap_env import run_cli
from support.mirror_env import continuous_mirror
from support.mirror_fixture import Mirrored


def reconcile(m: Mirrored, *args: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(m.config_path, "reconcile", "--output", "json", *args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # CliRunner reports a crash as exit 1
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def only_table(report: dict[str, Any]) -> dict[str, Any]:
    assert len(report["tables"]) == 1, report
    table: dict[str, Any] = report["tables"][0]
    return table


def in_sync_after_workload(m: Mirrored, operations: int, not_hashed: list[str]) -> None:
    deep_in_sync(m, sc.workload_then_same(m, operations), not_hashed)


def deep_in_sync(m: Mirrored, rows: int, not_hashed: list[str], settle: str = "30") -> None:
    """``reconcile --deep`` finds the table in sync with its ``rows`` rows, at the mirror's
    newest snapshot, every column compared but ``not_hashed``."""
    code, report = reconcile(m, "--deep", "--settle", settle)
    table = only_table(report)
    assert code == 0, json.dumps(table, indent=1)
    assert table["status"] == "in sync"
    assert table["source_rows"] == table["mirror_rows"] == rows
    assert table["events_behind"] == 0 and table["snapshot_id"] in m.snapshot_ids()
    assert table["position"] != "-" and table["source_commit_time"]
    deep = table["deep"]
    assert deep["drifted_buckets"] == [] and deep["changed_keys"] == [], deep
    assert deep["columns_not_compared"] == not_hashed


def no_false_drift_while_workload_runs(m: Mirrored, operations: int) -> None:
    """The continuous mirror runs and a workload writes while reconcile looks: settling
    waits the in-flight events out instead of calling them drift."""
    writer = threading.Thread(target=m.workload.run, args=(operations,))
    with continuous_mirror(m.config_path):
        writer.start()
        try:
            code, report = reconcile(m, "--deep", "--settle", "300")
            alive_during_check = writer.is_alive()
        finally:
            writer.join()
        table = only_table(report)
        assert code == 0, json.dumps(table, indent=1)
        assert table["status"] == "in sync" and table["deep"]["drifted_buckets"] == []
    m.assert_same()
    assert alive_during_check or table["attempts"] > 1, "the check never saw events in flight"


def lagging_reported_in_every_format(m: Mirrored) -> None:
    """Changes in Kafka that the mirror has not applied yet (the job stopped): every output
    format reports the table lagging with its lag, exit 1, no crash; in sync once applied."""
    sc.settle(m)
    m.mirror()
    m.workload.run(20)
    sc.settle(m)
    code, report = reconcile(m, "--settle", "0")
    table = only_table(report)
    assert code == 1 and table["status"] == "lagging", table
    assert table["events_behind"] > 0 and table["lag_seconds"] > 0, table
    text = run_cli(m.config_path, "reconcile", "--settle", "0")
    assert text.exception is None or isinstance(text.exception, SystemExit), text.output
    assert text.exit_code == 1 and f"{m.identifier} (lagging)" in text.stdout, text.output
    report_file = m.config_path.parent / f"{m.name}-lagging.md"
    markdown = run_cli(m.config_path, "reconcile", "--settle", "0", "--report", str(report_file))
    assert markdown.exit_code == 1 and "lagging" in report_file.read_text(), markdown.output
    m.mirror()
    code, report = reconcile(m, "--settle", "30")
    assert code == 0 and only_table(report)["status"] == "in sync", report


def _three_ids(m: Mirrored) -> list[int]:
    conn = m.source.connect()
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT id FROM {m.source.table} ORDER BY id LIMIT 3")
        return [int(r[0]) for r in cur.fetchall()]
    finally:
        conn.close()


def drift_found_with_keys(m: Mirrored) -> Path:
    """Change, delete and add a mirror row behind the mirror's back; returns the JSON
    report that names the three keys."""
    changed, missing, copied = _three_ids(m)
    extra = 10**12
    m.spark.sql(f"DELETE FROM {m.identifier} WHERE id = {missing}")
    code, report = reconcile(m, "--settle", "5")
    table = only_table(report)
    assert code == 1 and table["status"] == "drift" and table["difference"] == -1, report
    text = run_cli(m.config_path, "reconcile", "--settle", "5")
    assert text.exit_code == 1
    assert f"{m.identifier} (drift)" in text.stdout

    m.spark.sql(
        f"UPDATE {m.identifier} SET name = concat(coalesce(name, ''), '!') WHERE id = {changed}"
    )
    m.spark.sql(
        f"INSERT INTO {m.identifier} SELECT {extra} AS id, * EXCEPT (id) "
        f"FROM {m.identifier} WHERE id = {copied}"
    )
    report_file = m.config_path.parent / f"{m.name}-report.md"
    code, report = reconcile(m, "--deep", "--settle", "5", "--report", str(report_file))
    deep = only_table(report)["deep"]
    assert code == 1
    assert deep["changed_keys"] == [{"id": str(changed)}], deep
    assert deep["missing_keys"] == [{"id": str(missing)}], deep
    assert deep["extra_keys"] == [{"id": str(extra)}], deep
    markdown = report_file.read_text()
    assert "# cdcmirror reconcile" in markdown and f"id={extra}" in markdown
    keys_file = m.config_path.parent / f"{m.name}-drift.json"
    keys_file.write_text(json.dumps(report))
    return keys_file


def repair_heals(m: Mirrored, keys_file: Path) -> None:
    """`repair --keys-from` re-reads the changed and missing rows through Debezium's
    incremental snapshot and removes the extra one; the mirror applies the re-read rows and
    reconcile --deep reports the table in sync."""
    result = run_cli(m.config_path, "repair", "--table", "items", "--keys-from", str(keys_file))
    assert result.exit_code == 0, result.output
    assert "Debezium re-reads 2 row(s)" in result.stdout, result.output
    assert "removed 1 row(s)" in result.stdout, result.output
    mirror_until_in_sync(m)


def repair_report_until_in_sync(m: Mirrored, report: dict[str, Any], label: str) -> None:
    """`repair --keys-from` a reconcile --deep JSON ``report``, then mirror until in sync."""
    keys_file = m.config_path.parent / f"{m.name}-{label}.json"
    keys_file.write_text(json.dumps(report))
    result = run_cli(m.config_path, "repair", "--table", "items", "--keys-from", str(keys_file))
    assert result.exit_code == 0, result.output
    mirror_until_in_sync(m)


def mirror_until_in_sync(m: Mirrored) -> None:
    """Mirror until reconcile --deep says in sync (4 minutes at most), then compare row by
    row."""
    deadline = time.monotonic() + 240
    while True:
        sc.settle(m)
        m.mirror()
        code, report = reconcile(m, "--deep", "--settle", "10")
        if code == 0 or time.monotonic() > deadline:
            break
    assert code == 0, json.dumps(only_table(report), indent=1)
    m.assert_same()
