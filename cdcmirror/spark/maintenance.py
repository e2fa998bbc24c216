"""`cdcmirror maintain` on Spark: compact small data files and position delete files,
expire old snapshots, remove orphan files, with Iceberg's own procedures. Every step is
retried after a commit conflict with the mirror (Iceberg validates each commit, so a
conflict changes nothing and a retry starts from the new state)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from cdcmirror.catalog_properties import CATALOG_NAME
from cdcmirror.mirror.envelope import spark_name
from cdcmirror.mirror.history_cap import checks_at
from cdcmirror.spark.conflicts import retry_on_conflict
from cdcmirror.spark.java_classes import iceberg_table
from cdcmirror.spark.snapshot_expiry import cap_snapshots
from cdcmirror.sql_text import sql_string

logger = logging.getLogger(__name__)
MIN_ORPHAN_AGE_HOURS = 24  # Iceberg's procedure refuses less: files of running commits


@dataclass(frozen=True)
class MaintainSettings:
    target_file_size_mb: int = 128
    min_input_files: int = 2
    snapshot_retention_hours: float = 24.0
    retain_last: int = 5
    orphan_age_hours: float = 72.0


@dataclass
class FileCounts:
    data_files: int = 0
    data_bytes: int = 0
    delete_files: int = 0
    delete_bytes: int = 0
    snapshots: int = 0

    @property
    def files(self) -> int:
        return self.data_files + self.delete_files


@dataclass
class TableMaintenance:
    table: str
    before: FileCounts
    after: FileCounts
    rewritten_data_files: int = 0
    rewritten_delete_files: int = 0
    expired_snapshots: int = 0
    orphans_removed: int = 0


def file_counts(spark: Any, identifier: str) -> FileCounts:
    name = f"{CATALOG_NAME}.{spark_name(identifier)}"  # metadata tables need the catalog
    spark.sql(f"REFRESH TABLE {name}")
    out = FileCounts()
    for r in spark.sql(
        f"SELECT content, count(*) AS n, coalesce(sum(file_size_in_bytes), 0) AS b "
        f"FROM {name}.files GROUP BY content"
    ).collect():
        if r.content == 0:
            out.data_files, out.data_bytes = int(r.n), int(r.b)
        else:
            out.delete_files += int(r.n)
            out.delete_bytes += int(r.b)
    out.snapshots = int(spark.sql(f"SELECT count(*) FROM {name}.snapshots").first()[0])
    return out


def _ts(t: datetime) -> str:
    return f"TIMESTAMP '{t.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def lists_by_prefix(location: str) -> bool:
    """Whether orphan files are found by listing through the table's FileIO (object stores:
    Spark's Hadoop configuration may have no file system for ``s3://``) instead of Hadoop's
    file system (local and HDFS tables).

    >>> lists_by_prefix("s3://warehouse/rest/t/metadata/1.json"), lists_by_prefix("/w/t/m.json")
    (True, False)
    >>> lists_by_prefix("file:/w/t/metadata/1.json"), lists_by_prefix("hdfs://nn/w/m.json")
    (False, False)
    """
    scheme = location.split("://", 1)[0] if "://" in location else ""
    return scheme not in ("", "hdfs") and not location.startswith("file:")


def _remove_orphans(spark: Any, identifier: str, older_than: datetime) -> int:
    """Files under the table's location that no snapshot references, removed."""
    location = spark.sql(f"SELECT file FROM {identifier}.metadata_log_entries LIMIT 1").first()
    listing = ", prefix_listing => true" if lists_by_prefix(str(location.file)) else ""
    table = sql_string(f"{CATALOG_NAME}.{identifier}")
    orphans = spark.sql(
        f"CALL {CATALOG_NAME}.system.remove_orphan_files(table => {table}, "
        f"older_than => {_ts(older_than)}{listing})"
    ).collect()
    return len(orphans)


def maintain_table(
    spark: Any,
    identifier: str,
    settings: MaintainSettings,
    progress: Callable[[str], None],
) -> TableMaintenance:
    # named with its catalog: a bare `namespace.table` makes Iceberg try the namespace as a
    # catalog first and log a WARN with a stack trace for each procedure call
    table = sql_string(f"{CATALOG_NAME}.{identifier}")
    call = f"CALL {CATALOG_NAME}.system"
    before = file_counts(spark, identifier)
    result = TableMaintenance(identifier, before, before)
    target = settings.target_file_size_mb * 1024 * 1024

    def rewrite_data() -> Any:
        return spark.sql(
            f"{call}.rewrite_data_files(table => {table}, options => map("
            f"'min-input-files', '{settings.min_input_files}', "
            "'delete-file-threshold', '1', "
            f"'target-file-size-bytes', '{target}', "
            "'partial-progress.enabled', 'true', "
            "'remove-dangling-deletes', 'true'))"
        ).first()

    progress(
        f"{identifier}: compacting {before.data_files} data and {before.delete_files} delete files"
    )
    row = retry_on_conflict(rewrite_data, f"{identifier}: rewrite_data_files")
    result.rewritten_data_files = int(row.rewritten_data_files_count)

    def rewrite_deletes() -> Any:
        return spark.sql(
            f"{call}.rewrite_position_delete_files(table => {table}, "
            "options => map('rewrite-all', 'true'))"
        ).first()

    row = retry_on_conflict(rewrite_deletes, f"{identifier}: rewrite_position_delete_files")
    result.rewritten_delete_files = int(row.rewritten_delete_files_count)

    now = datetime.now(tz=UTC).replace(tzinfo=None)
    expire_before = now - timedelta(hours=settings.snapshot_retention_hours)

    def expire() -> Any:
        return spark.sql(
            f"{call}.expire_snapshots(table => {table}, older_than => {_ts(expire_before)}, "
            f"retain_last => {max(1, settings.retain_last)})"
        ).first()

    row = retry_on_conflict(expire, f"{identifier}: expire_snapshots")
    result.expired_snapshots = int(row.deleted_manifest_lists_count or 0)

    orphan_age = max(MIN_ORPHAN_AGE_HOURS, settings.orphan_age_hours)
    result.orphans_removed = _remove_orphans(spark, identifier, now - timedelta(hours=orphan_age))
    result.after = file_counts(spark, identifier)
    return result


def maintain_between_batches(
    spark: Any,
    identifiers: list[str],
    settings: MaintainSettings | None,
    log: Any,
    seen: dict[str, int | None] | None = None,
) -> None:
    """``maintain_table`` of each table, each result one line of ``log`` (a logger); with
    ``seen`` (each table's current snapshot after this job last maintained it, kept there),
    only the tables that something committed to since (``unchanged``): a job's idle tables
    are not compacted, expired and listed for orphans again and again."""
    for identifier in identifiers:
        current = _current_snapshot(spark, identifier)
        if seen is not None and unchanged(seen, identifier, current):
            log.debug("maintain of %s: nothing committed since the last one", identifier)
            continue
        done = maintain_table(spark, identifier, settings or MaintainSettings(), log.debug)
        if seen is not None:
            seen[identifier] = _current_snapshot(spark, identifier)
        log.info(
            "maintained %s: %d -> %d data files, %d -> %d delete files",
            identifier,
            done.before.data_files,
            done.after.data_files,
            done.before.delete_files,
            done.after.delete_files,
        )


def unchanged(seen: Mapping[str, int | None], identifier: str, current: int | None) -> bool:
    """Whether ``identifier``'s ``current`` snapshot is the one it had after this job last
    maintained it (``seen``): nothing was committed since, so there is nothing to compact and
    no snapshot to expire that was not there then.

    >>> unchanged({"a.t": 7}, "a.t", 7), unchanged({"a.t": 7}, "a.t", 8), unchanged({}, "a.t", 7)
    (True, False, False)
    >>> unchanged({"a.t": None}, "a.t", None)  # still no snapshot
    True
    """
    return identifier in seen and seen[identifier] == current


def _current_snapshot(spark: Any, identifier: str) -> int | None:
    snapshot = iceberg_table(spark, spark_name(identifier)).currentSnapshot()
    return None if snapshot is None else int(snapshot.snapshotId())


@dataclass(frozen=True)
class JobMaintenance:
    """What the mirror job maintains between its batches."""

    every_batches: int = 0  # `maintain` of its tables every N batches (0: never)
    settings: MaintainSettings | None = None
    max_snapshots: int = 0  # each table's snapshots kept at most (``history_cap``; 0: no cap)
    # each table's current snapshot after the job last maintained it (filled as it runs)
    seen: dict[str, int | None] = field(default_factory=dict)


def between_batches(
    spark: Any,
    batch_id: int,
    identifiers: list[str],
    tombstones: list[str],
    maintenance: JobMaintenance,
    log: Any,
) -> None:
    """The mirror job's housekeeping after batch ``batch_id``: `maintain` of its tables
    (``identifiers``), and the bound on each table's snapshots, its ``tombstones`` tables'
    (Spark names) too."""
    every, cap = maintenance.every_batches, maintenance.max_snapshots
    if every and batch_id > 0 and batch_id % every == 0:
        maintain_between_batches(spark, identifiers, maintenance.settings, log, maintenance.seen)
    if checks_at(batch_id, cap):
        cap_snapshots(spark, [spark_name(i) for i in identifiers] + tombstones, cap)
