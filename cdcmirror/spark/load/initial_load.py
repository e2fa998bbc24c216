"""The initial load's Spark side: read a table over JDBC in parallel, convert each column
(``load/columns.py``), write the Iceberg table in one commit.

Each partition is one JDBC read of its own (a subquery with the partition's condition: on
PostgreSQL a ``ctid`` range, which only the table itself can filter on), so the table is
read by as many tasks as it has partitions, each writing its own data files. The commit
replaces whatever the table held (an interrupted load is loaded again whole) and carries
the load's summary. Rows with a value that does not convert are not written: counted, one
of their keys named, for the command to report.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any

from cdcmirror.load.columns import error_sql
from cdcmirror.load.plan import SUMMARY_PROPERTY, TableLoad
from cdcmirror.load.progress import TableProgress
from cdcmirror.mirror.high_water import Mark
from cdcmirror.mirror.high_water import summary as high_water_summary
from cdcmirror.mirror.positions import position_literal
from cdcmirror.spark.iceberg import current_snapshot
from cdcmirror.sql_text import as_of, q, spark_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class JdbcSource:
    url: str
    driver: str
    user: str
    password: str
    session_init: str  # run on every connection before its read
    fetch_size: int = 10_000

    def options(self) -> dict[str, str]:
        return {
            "url": self.url,
            "driver": self.driver,
            "user": self.user,
            "password": self.password,
            "fetchsize": str(self.fetch_size),
            "sessionInitStatement": self.session_init,
        }


@dataclass(frozen=True)
class Loaded:
    rows: int  # written
    bad: int  # not written: a value did not convert
    example: str | None  # "key: columns" of one such row
    seconds: float
    kept_deleted: int = 0  # rows the table had and the load did not, kept as deleted


def read_converted(
    spark: SparkSession,
    source: JdbcSource,
    load: TableLoad,
    where: Sequence[str],
    position: Sequence[int],
    source_ts_us: int,
) -> DataFrame:
    """The table's rows as the mirror writes them, ``_cdc_`` columns and ``_cdc_load_error``."""
    reads = [
        spark.read.format("jdbc").options(**source.options(), dbtable=load.query(w)).load()
        for w in where
    ]
    raw = reduce(lambda a, b: a.unionAll(b), reads)
    cols = load.columns
    converted = raw.selectExpr(
        *[f"{c.convert} AS {q(c.name)}" for c in cols], *[c.alias for c in cols]
    )
    return converted.selectExpr(
        *[q(c.name) for c in cols],
        "'r' AS _cdc_op",
        f"{position_literal(position)} AS _cdc_position",
        f"timestamp_micros({int(source_ts_us)}L) AS _cdc_source_ts",
        "false AS _cdc_deleted",
        f"{error_sql(cols)} AS _cdc_load_error",
    )


def write_loaded(
    spark: SparkSession,
    frame: DataFrame,
    load: TableLoad,
    summary: str,
    group: str,
    keep_deleted: bool = False,
    mark: Mark = None,
) -> Loaded:
    """Replace the table's rows with ``frame``'s good ones, in one commit that records
    ``mark`` (``high_water.loaded``; not with ``keep_deleted``); with ``keep_deleted`` (a
    soft re-load) the rows it had that the load does not have follow in a second commit,
    marked deleted. A column of the table the load does not read (the source dropped it) is
    NULL."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    key = load.key or tuple(c.name for c in load.columns[:1])
    key_text = "concat_ws(', ', " + ", ".join(f"CAST({q(k)} AS STRING)" for k in key) + ")"
    seen = Observation(f"load {load.identifier}")
    observed = frame.observe(
        seen,
        F.expr("count(*)").alias("rows"),
        F.expr("count_if(_cdc_load_error IS NOT NULL)").alias("bad"),
        F.expr(
            f"min(IF(_cdc_load_error IS NULL, NULL, concat({key_text}, ': ', _cdc_load_error)))"
        ).alias("example"),
    )
    good = _aligned(spark, observed.where("_cdc_load_error IS NULL").drop("_cdc_load_error"), load)
    before = current_snapshot(spark, spark_name(load.identifier)).id if keep_deleted else None
    started = time.monotonic()
    sc = spark.sparkContext
    sc.setJobGroup(group, f"cdcmirror initial load of {load.identifier}")
    writer = good.writeTo(spark_name(load.identifier)).option(
        f"snapshot-property.{SUMMARY_PROPERTY}", summary
    )
    for name, value in high_water_summary(None if keep_deleted else mark).items():
        writer = writer.option(f"snapshot-property.{name}", value)
    try:
        writer.overwrite(F.lit(True))
        kept = _keep_deleted(spark, load, key, before) if before is not None else 0
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]  # None clears it
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
    metrics = seen.get
    bad = int(metrics.get("bad") or 0)
    return Loaded(
        rows=int(metrics.get("rows") or 0) - bad,
        bad=bad,
        example=metrics.get("example"),
        seconds=time.monotonic() - started,
        kept_deleted=kept,
    )


def _aligned(spark: SparkSession, frame: DataFrame, load: TableLoad) -> DataFrame:
    """``frame`` with the table's columns, in its order: NULL for one the load has not."""
    from pyspark.sql import functions as F

    have = set(frame.columns)
    return frame.select(
        *[
            F.col(q(f.name)) if f.name in have else F.lit(None).cast(f.dataType).alias(f.name)
            for f in spark.table(spark_name(load.identifier)).schema.fields
        ]
    )


def _keep_deleted(spark: SparkSession, load: TableLoad, key: Sequence[str], before: int) -> int:
    """Append the rows the table had at snapshot ``before`` whose key the load has not,
    as deleted rows (kept deleted ones unchanged)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    name = spark_name(load.identifier)
    on = " AND ".join(f"o.{q(k)} <=> n.{q(k)}" for k in key)
    gone = spark.sql(f"SELECT o.* FROM {as_of(name, before)} o LEFT ANTI JOIN {name} n ON {on}")
    gone = gone.withColumn("_cdc_op", F.expr("IF(_cdc_deleted, _cdc_op, 'd')")).withColumn(
        "_cdc_deleted", F.lit(True)
    )
    seen = Observation(f"kept deleted {load.identifier}")
    gone.observe(seen, F.expr("count(*)").alias("rows")).writeTo(name).append()
    return int(seen.get.get("rows") or 0)


class ProgressWatch:
    """Reports a table's progress every ``every`` seconds while its load runs (from the
    tasks of its job group), on a thread of its own."""

    def __init__(
        self,
        spark: SparkSession,
        group: str,
        table: str,
        estimated_rows: int,
        on_progress: Callable[[TableProgress], None],
        every: float = 5.0,
    ) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.group, self.table, self.estimate = group, table, estimated_rows
        self.on_progress, self.every = on_progress, every
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"progress {table}", daemon=True)

    def __enter__(self) -> ProgressWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def tasks(self) -> tuple[int, int]:
        """Tasks done and tasks in all, over the stages of the group's jobs so far."""
        done = total = 0
        for job_id in self.tracker.getJobIdsForGroup(self.group):
            job = self.tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else []:
                stage = self.tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        return done, total

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            done, total = self.tasks()
            if total:
                seconds = time.monotonic() - self.started
                self.on_progress(TableProgress(self.table, self.estimate, done, total, seconds))
