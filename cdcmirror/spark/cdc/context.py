"""One table's share of a micro-batch, and what applying it needs: the batch's session, the
table, the properties every commit of it carries, how deletes are kept, where its
tombstones and dead letters go. Frozen: a step that changes what the commits carry (the
high-water mark raised) makes a new one."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cdcmirror.mirror.high_water import HIGH_WATER
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.stats import TableStats
from cdcmirror.spark import iceberg
from cdcmirror.spark.tombstones import TombstoneTables
from cdcmirror.sql_text import spark_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger("cdcmirror.mirror")


@dataclass(frozen=True)
class TableContext:
    spark: SparkSession  # the batch's session (its temp views)
    table: MirrorTable
    batch_id: int
    stats: TableStats  # what the batch did to the table, filled as it goes
    props: Mapping[str, str]  # snapshot summary properties of every commit
    soft: bool  # soft deletes
    fail_on_dead_letter: bool
    tombstones: TombstoneTables
    raw: DataFrame  # the table's Kafka records of the batch (dead letters keep key and value)

    @property
    def target(self) -> str:
        """The table's Spark name."""
        return spark_name(self.table.identifier)

    @property
    def view(self) -> str:
        """The prefix of the batch's temp views of the table."""
        return f"_cdcm_{abs(hash(self.table.identifier))}_{abs(self.batch_id)}"

    def with_props(self, more: Mapping[str, str]) -> TableContext:
        return replace(self, props={**self.props, **more})

    def commit(self, sql: str, data: bool = False) -> None:
        """Run ``sql``, its snapshots carrying the batch's properties; ``data``: it is the
        MERGE of the batch's rows (``iceberg.data_commit``)."""
        commit = iceberg.data_commit if data else iceberg.with_commit_props
        commit(self.spark, self.props, lambda: self.spark.sql(sql))

    def put_back(self, read: int | None, sql: str) -> None:
        """After the unguarded MERGE, committed on a snapshot that a foreign commit made since
        the batch read snapshot ``read`` (``iceberg.foreign_parent``): ``sql`` puts back the
        rows of the batch's keys that were stored newer (``merge_sql.restore_sql``), or, after
        an insert-only MERGE, which left the rows it found stored, MERGEs the batch with the
        position guard. Its commit records no high-water mark: the foreign commit's positions
        are covered by none."""
        logger.warning(
            "%s: a commit not made by this batch landed between the snapshot it read (%s) and "
            "its MERGE; the batch's keys are written as the position guard decides",
            self.table.identifier,
            read,
        )
        unmarked = {k: v for k, v in self.props.items() if k != HIGH_WATER}
        replace(self, props=unmarked).commit(sql)
