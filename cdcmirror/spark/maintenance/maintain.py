"""`cdcmirror maintain` on Spark: compact small data files and position delete files,
expire old snapshots, remove orphan files, with Iceberg's own procedures. Every step is
retried after a commit conflict with the mirror (Iceberg validates each commit, so a
conflict changes nothing and a retry starts from the new state)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from cdcmirror.config.catalog import CATALOG_NAME
from cdcmirror.maintain.run import FileCounts, MaintainSettings, TableMaintenance
from cdcmirror.mirror.envelope import spark_name
from cdcmirror.spark.iceberg import retry_on_conflict
from cdcmirror.spark.maintenance.prune import prune_tombstones
from cdcmirror.spark.rows import first_value, one_row
from cdcmirror.sql_text import sql_string

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

logger = logging.getLogger(__name__)
MIN_ORPHAN_AGE_HOURS = 24  # Iceberg's procedure refuses less: files of running commits


def file_counts(spark: SparkSession, identifier: str) -> FileCounts:
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
    out.snapshots = int(first_value(spark.sql(f"SELECT count(*) FROM {name}.snapshots")))
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


def _remove_orphans(spark: SparkSession, identifier: str, older_than: datetime) -> int:
    """Files under the table's location that no snapshot references, removed."""
    location = one_row(spark.sql(f"SELECT file FROM {identifier}.metadata_log_entries LIMIT 1"))
    listing = ", prefix_listing => true" if lists_by_prefix(str(location.file)) else ""
    table = sql_string(f"{CATALOG_NAME}.{identifier}")
    orphans = spark.sql(
        f"CALL {CATALOG_NAME}.system.remove_orphan_files(table => {table}, "
        f"older_than => {_ts(older_than)}{listing})"
    ).collect()
    return len(orphans)


def _prune(
    spark: SparkSession,
    identifier: str,
    settings: MaintainSettings,
    progress: Callable[[str], None],
) -> int:
    """The tombstones of ``identifier`` older than the settings' retention pruned (none when
    it is 0); how many."""
    if settings.tombstone_retention_hours <= 0:
        return 0
    now = datetime.now(tz=UTC).replace(tzinfo=None)
    older = now - timedelta(hours=settings.tombstone_retention_hours)
    progress(f"{identifier}: pruning tombstones older than {older:%Y-%m-%d %H:%M} UTC")
    return prune_tombstones(spark, spark_name(identifier), older, settings.position_length)


def rewrite_data_files(spark: SparkSession, identifier: str, settings: MaintainSettings) -> Row:
    """Iceberg's ``rewrite_data_files`` of the table: small files and every file with deletes
    rewritten into ``target_file_size_mb`` files, dangling deletes removed; its result row."""
    # named with its catalog: a bare `namespace.table` makes Iceberg try the namespace as a
    # catalog first and log a WARN with a stack trace for each procedure call
    table = sql_string(f"{CATALOG_NAME}.{identifier}")
    target = settings.target_file_size_mb * 1024 * 1024

    def rewrite() -> Row:
        return one_row(
            spark.sql(
                f"CALL {CATALOG_NAME}.system.rewrite_data_files(table => {table}, options => map("
                f"'min-input-files', '{settings.min_input_files}', "
                "'delete-file-threshold', '1', "
                f"'target-file-size-bytes', '{target}', "
                "'partial-progress.enabled', 'true', "
                "'remove-dangling-deletes', 'true'))"
            )
        )

    return retry_on_conflict(rewrite, f"{identifier}: rewrite_data_files")


def rewrite_position_deletes(spark: SparkSession, identifier: str) -> Row:
    """Iceberg's ``rewrite_position_delete_files`` of every delete file of the table: what
    still deletes a row is rewritten, what deletes none (of files a compaction rewrote, which
    ``rewrite_data_files`` leaves when they are as new as its start) is dropped; its result
    row."""
    table = sql_string(f"{CATALOG_NAME}.{identifier}")

    def rewrite() -> Row:
        return one_row(
            spark.sql(
                f"CALL {CATALOG_NAME}.system.rewrite_position_delete_files(table => {table}, "
                "options => map('rewrite-all', 'true'))"
            )
        )

    return retry_on_conflict(rewrite, f"{identifier}: rewrite_position_delete_files")


def expire_by_age(spark: SparkSession, identifier: str, settings: MaintainSettings) -> int:
    """Iceberg's ``expire_snapshots`` of the snapshots older than the settings' retention
    (the newest ``retain_last`` kept); how many manifest lists it deleted."""
    table = sql_string(f"{CATALOG_NAME}.{identifier}")
    now = datetime.now(tz=UTC).replace(tzinfo=None)
    before = now - timedelta(hours=settings.snapshot_retention_hours)

    def expire() -> Row:
        return one_row(
            spark.sql(
                f"CALL {CATALOG_NAME}.system.expire_snapshots(table => {table}, "
                f"older_than => {_ts(before)}, retain_last => {max(1, settings.retain_last)})"
            )
        )

    row = retry_on_conflict(expire, f"{identifier}: expire_snapshots")
    return int(row.deleted_manifest_lists_count or 0)


def maintain_table(
    spark: SparkSession,
    identifier: str,
    settings: MaintainSettings,
    progress: Callable[[str], None],
    tombstones: bool = False,
) -> TableMaintenance:
    """``tombstones``: ``identifier`` is a tombstone table (``spark/tombstones.py``), whose
    tombstones older than ``settings.tombstone_retention_hours`` are pruned first."""
    pruned = _prune(spark, identifier, settings, progress) if tombstones else 0
    before = file_counts(spark, identifier)
    result = TableMaintenance(identifier, before, before, tombstones_pruned=pruned)
    progress(
        f"{identifier}: compacting {before.data_files} data and {before.delete_files} delete files"
    )
    row = rewrite_data_files(spark, identifier, settings)
    result.rewritten_data_files = int(row.rewritten_data_files_count)
    row = rewrite_position_deletes(spark, identifier)
    result.rewritten_delete_files = int(row.rewritten_delete_files_count)

    result.expired_snapshots = expire_by_age(spark, identifier, settings)
    now = datetime.now(tz=UTC).replace(tzinfo=None)
    orphan_age = max(MIN_ORPHAN_AGE_HOURS, settings.orphan_age_hours)
    result.orphans_removed = _remove_orphans(spark, identifier, now - timedelta(hours=orphan_age))
    result.after = file_counts(spark, identifier)
    return result


def maintain_between_batches(
    spark: SparkSession,
    identifiers: list[str],
    settings: MaintainSettings,
    log: logging.Logger,
    tombstones: bool = False,
    expire: bool = False,
) -> None:
    """The job's maintenance of each table (``tombstones``: tombstone tables, their old
    tombstones pruned first): the compaction alone (``rewrite_data_files``, which applies
    the delete files, then ``rewrite_position_delete_files``, which drops those that delete
    nothing any more), each result one line of ``log`` (a logger). A table's snapshots are
    bounded by ``max_snapshots`` in every job (``expire``: it is 0, and they are expired by
    age here too); expiry by age and the orphan listing are `cdcmirror maintain`'s: with the
    two file counts, they are most of a table's maintenance, which the rewrites are not."""
    for identifier in identifiers:
        pruned = _prune(spark, identifier, settings, log.debug) if tombstones else 0
        data = rewrite_data_files(spark, identifier, settings)
        deletes = rewrite_position_deletes(spark, identifier)
        if expire:
            expire_by_age(spark, identifier, settings)
        log.info(
            "maintained %s: %d -> %d data files, %d -> %d delete files%s",
            identifier,
            int(data.rewritten_data_files_count),
            int(data.added_data_files_count),
            int(deletes.rewritten_delete_files_count),
            int(deletes.added_delete_files_count),
            f", {pruned} tombstones pruned" if tombstones else "",
        )
