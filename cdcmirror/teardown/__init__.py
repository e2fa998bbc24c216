"""``cdcmirror teardown``: remove a mirror and what it holds at the source."""
