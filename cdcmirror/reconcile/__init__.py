"""`cdcmirror reconcile`: prove each mirrored table equals its source, or show where not;
and `cdcmirror repair`, which heals the keys a report names (``repair.py``)."""
