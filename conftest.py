"""Fixtures the test tiers share, registered once for the whole run: one xdist worker runs
files of several tiers, and a fixture defined in two conftests would be two fixtures there
(two local Spark worlds, the second handed the first's session and catalog)."""

pytest_plugins = ["support.spark"]
