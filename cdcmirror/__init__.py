"""cdcmirror: mirror MySQL/MariaDB and PostgreSQL into Apache Iceberg with exactly-once effect."""

__version__ = "0.1.0"
