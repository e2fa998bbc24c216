"""Is every change reaching Kafka? The source connector's state, a MySQL/MariaDB source's
binlog settings and history, and the mirror job's watch over the connector while it runs."""
