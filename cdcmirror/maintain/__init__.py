"""`cdcmirror maintain`: compaction and snapshot expiry of the mirrored tables."""
