"""The initial load and the re-load of a table on Spark: read over JDBC in parallel, written in
one commit."""
