"""`cdcmirror reconcile`: prove each mirrored table equals its source, or show where not."""
