"""Everything that runs on Spark (the only package that imports pyspark)."""
