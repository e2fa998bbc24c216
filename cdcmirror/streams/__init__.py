"""Plain event topics (``[[streams]]``): append-only Kafka topics, or topics upserted by a
key, mirrored into Iceberg exactly once beside the CDC tables. The pure parts: the stream
specs (``spec.py``), the table a stream gets (``schema.py``), the SQL of a batch
(``sql.py``)."""
