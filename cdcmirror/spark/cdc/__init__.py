"""The CDC batch: a micro-batch of Debezium events decoded, deduplicated by source position
and MERGEd into each mirrored table (``batch.py`` reads top to bottom)."""
