"""The Iceberg table properties cdcmirror writes and reads: the contract between bootstrap,
which creates a table, and every command that later finds its tables in the catalog.

Snapshot-summary properties (offsets, query and batch id of each commit) are in
``mirror/resume.py``; these are properties of the table itself."""

from __future__ import annotations

SOURCE_PROPERTY = "cdcmirror.source"  # "<flavor>:<schema.table>": the source table mirrored
KEY_PROPERTY = "cdcmirror.key"  # where the key came from: primary key, unique index, none
MODE_PROPERTY = "cdcmirror.mode"  # upsert (a key) or append (keyless)
CARRIERS_PROPERTY = "cdcmirror.carriers"  # column -> Debezium carrier the mirror decodes
TRUNCATED_PROPERTY = "cdcmirror.truncated-at"  # the position of the last TRUNCATE applied
# the truncate's commit time, epoch microseconds (positions.went_backwards_sql)
TRUNCATED_TS_PROPERTY = "cdcmirror.truncated-at-ts"
# PostgreSQL: the changes the last re-load's rows hold (mirror/reload_mark.py)
RELOADED_PROPERTY = "cdcmirror.reloaded"
LEASE_PROPERTY = "cdcmirror.lease"  # the mirror job that holds the table (mirror/lease.py)
LOAD_PROPERTY = "cdcmirror.initial-load"  # LOAD_PENDING until the Spark load, then its summary
LOAD_PENDING = "pending"
STREAM_PROPERTY = "cdcmirror.stream"  # the [[streams]] entry the table was made for
# a mirrored table's history table (``mirror.history``, ``mirror/history.py``), and the
# history table's mirrored table
HISTORY_PROPERTY = "cdcmirror.history"
HISTORY_OF_PROPERTY = "cdcmirror.history-of"

# Row-level changes write delete files, not rewritten data files (every table cdcmirror makes)
MERGE_ON_READ = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}

# Written on every table cdcmirror creates. Iceberg's Java API writes zstd on the tables it
# creates (since 1.4) and reads a table without the property as gzip; pyiceberg, which
# creates cdcmirror's tables, writes none, so Spark wrote them gzip-compressed, which writes
# far slower (benchmarks/RESULTS.md).
WRITE_DEFAULTS = {"write.parquet.compression-codec": "zstd"}
# the consistent point a table's consistent tag is at (``mirror/consistent_point.Point.text``),
# set in the same metadata commit that moves the tag
POINT_PROPERTY = "cdcmirror.consistent-point"
