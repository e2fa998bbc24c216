"""``cdcmirror bootstrap``: discover the source, create the Iceberg tables, register the
Debezium connector; and ``cdcmirror teardown``, which removes them (``teardown.py``)."""
