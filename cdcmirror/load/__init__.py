"""The initial load through Spark (``[bootstrap] initial_load = "spark"``): the pure parts.

``columns.py`` and the dialect modules say how each source column is read over JDBC and
turned into the value the streaming path writes; ``partitions.py`` splits a table into
parallel reads; ``progress.py`` turns what is done into rows/s and an ETA. The JDBC read and
the Iceberg write are ``spark/load/initial_load.py``; the order of the steps (start position,
load, connector) is ``commands/initial_load.py``.
"""
