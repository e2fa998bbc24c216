"""The local stack: a KRaft Kafka broker and a Kafka Connect worker with Debezium, no Docker."""
