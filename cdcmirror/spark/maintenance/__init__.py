"""Iceberg table maintenance on Spark: `cdcmirror maintain` and the mirror job's own between
batches (compaction, snapshot expiry and its bound, orphan files, old tombstones)."""
