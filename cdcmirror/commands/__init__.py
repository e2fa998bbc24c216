"""The commands (bootstrap, mirror, reconcile, repair, maintain, teardown, replay of dead
letters): the only modules that wire the adapters (source/, catalog/, spark/, Kafka) and
the pure core together. In the package only the command line (``cli/``) imports them
(``tests/test_layout.py`` keeps it so)."""
