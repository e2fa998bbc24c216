"""Plain event topics (``[[streams]]``) on Spark: each batch appended, or upserted by key, and
reconciled against Kafka."""
