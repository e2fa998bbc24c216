"""The rules of maintenance, pure: what a run is asked and what it did (``run.py``), how it is
shown (``report.py``), and the mirror job's own cap on a table's snapshots
(``history_cap.py``). Spark runs them in ``spark/maintenance/``."""
