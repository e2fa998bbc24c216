"""``cdcmirror replay-dead-letters``: apply a table's dead letters through the normal
position-guarded path, once their cause is fixed (DESIGN.md rule 6).

The dead letters are read back as the Kafka rows they were (topic, partition, offset, key,
value, headers) and handed to the same applier as one batch. The guard makes this safe at
any time, also while the mirror job runs: an event older than what a row holds changes
nothing, a deleted key's tombstone keeps an older insert out. A dead letter that fails again
stays, with the new reason; the others are removed from the dead-letter table afterwards (a
crash in between leaves them to be replayed again, which changes nothing).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from cdcmirror.config import Config
from cdcmirror.spark.rows import first_value
from cdcmirror.sql_text import sql_string

logger = logging.getLogger(__name__)

REPLAY_BATCH_ID = -1  # commits made by a replay carry this batch id in their summary


@dataclass(frozen=True)
class ReplayResult:
    table: str
    replayed: int
    still_failing: int


def replay_dead_letters(config: Config, table_name: str) -> ReplayResult:
    from cdcmirror.catalog import load_catalog
    from cdcmirror.commands.job_tables import load_tables
    from cdcmirror.commands.mirror import build_applier
    from cdcmirror.mirror.envelope import spark_name
    from cdcmirror.spark.session import build_spark_session

    catalog = load_catalog(config)
    tables = load_tables(config, catalog, [table_name])
    table = tables[0]
    spark = build_spark_session(config, "cdcmirror-replay-dead-letters")
    applier = build_applier(config, catalog, tables, spark)
    run_id = f"replay-dead-letters-{uuid.uuid4()}"
    applier.query_id = run_id
    dead = spark_name(applier.dead_letter_table)
    spark.sql(f"REFRESH TABLE {dead}")
    started = first_value(spark.sql("SELECT CAST(current_timestamp() AS STRING)"))
    mine = f"table_name = {sql_string(table.identifier)}"
    before = f"{mine} AND dead_lettered_at <= TIMESTAMP '{started}'"
    events = spark.sql(
        f"SELECT topic, partition, offset, key, value, headers FROM {dead} WHERE {before}"
    ).localCheckpoint(eager=True)
    count = events.count()
    if count == 0:
        return ReplayResult(table.identifier, 0, 0)
    logger.info("replaying %d dead letter(s) of %s", count, table.identifier)
    applier.process(events, REPLAY_BATCH_ID)
    spark.sql(f"REFRESH TABLE {dead}")
    # failed again: updated by this run (a later time, this run's id); applied: the rest
    failing = spark.sql(f"SELECT count(*) FROM {dead} WHERE {mine} AND query_id = '{run_id}'")
    spark.sql(f"DELETE FROM {dead} WHERE {before} AND query_id <> '{run_id}'")
    return ReplayResult(table.identifier, count, int(first_value(failing)))
