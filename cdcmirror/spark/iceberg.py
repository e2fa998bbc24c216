"""Iceberg tables as the Spark session's JVM has them: their snapshots (the one a batch
reads, the history walked back from the current one, the high-water mark they record), and
the commits the mirror makes, each snapshot carrying the batch's properties, retried when it
lost a race with another writer (``cdcmirror maintain`` commits to the same tables).

The position guard of a batch's MERGE is checked on snapshots instead of on every stored
row. The classification compares each change's position with the stored row's
(``merge_sql.classify_sql``), on the snapshot it reads (:func:`current_snapshot`, pinned by
``VERSION AS OF``). The MERGE then writes only changes found newer there, without comparing
positions again: that comparison made Iceberg read the nested position column, and so every
column of its scan row by row, over every file the batch touches. It gives the guarded
MERGE's rows when nothing but file rewrites (``maintain``) was committed between the snapshot
the classification read and the one the MERGE was committed on: commits after the MERGE's own
scan are Iceberg's to refuse (serializable isolation), and a refused commit is retried. A
foreign commit in between (the mirror's tables are cdcmirror's to write: a writer outside
it, or a second job despite the lease) is found after the MERGE (:func:`foreign_parent`),
and each row of the batch's keys that the MERGE's snapshot held at a newer position is put
back (``merge_sql.restore_sql``), as the guard would have kept it.

:func:`data_commit` is the commit of a batch's rows (a table MERGE, a stream append), the one
whose timing matters to exactly-once; the crash tests wrap it
(``support/faulty_cli.py``), production code carries no fault injection.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar

from cdcmirror.config.catalog import CATALOG_NAME
from cdcmirror.mirror.high_water import (
    HIGH_WATER,
    REWRITE,
    Mark,
    max_position_sql,
    recorded,
    scanned,
)
from cdcmirror.mirror.resume import BATCH_ID, QUERY_ID
from cdcmirror.spark.rows import first_value
from cdcmirror.sql_text import spark_name
from cdcmirror.table_properties import POINT_PROPERTY

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger("cdcmirror.mirror")

T = TypeVar("T")
# a Py4J proxy of a Java object (a table, a snapshot): its members are known at run time only
Java = Any
MAX_WALK = 1000  # snapshots looked at, at most, between the classification and the MERGE


# -- Java classes --------------------------------------------------------------------------
def java_class(spark: SparkSession, name: str) -> Java:
    """The Java class ``name`` (e.g. ``java.util.HashMap``) of ``spark``'s JVM: its static
    members, and its constructors by calling it. Not ``sparkContext._jvm.<package>.<Class>``:
    Py4J resolves each part of that path with a class lookup, and a part that is a package
    is a lookup that fails, through every jar of the class path; a class named here is
    found by one lookup, when a member is first used."""
    from py4j.java_gateway import JavaClass

    gateway = spark.sparkContext._gateway
    assert gateway is not None, "a session with a JVM"
    return JavaClass(name, gateway._gateway_client)


def iceberg_table(spark: SparkSession, target: str) -> Java:
    """The Iceberg table ``target`` (its Spark name) as the session's catalog has it now
    (Java)."""
    # Spark's catalog manager looks catalogs up in the conf of the thread's active session,
    # which a table's thread (or a second query of the same process) may not have set to
    # this one yet: ``spark.sql`` sets it, this call does not
    java_class(spark, "org.apache.spark.sql.SparkSession").setActiveSession(spark._jsparkSession)
    spark_util = java_class(spark, "org.apache.iceberg.spark.Spark3Util")
    return spark_util.loadIcebergTable(spark._jsparkSession, f"{CATALOG_NAME}.{target}")


# -- snapshots -----------------------------------------------------------------------------
class Read(NamedTuple):
    """The snapshot a batch's classification reads."""

    id: int | None  # None: the table has none yet
    rows: int  # the rows it holds, by its summary (position deletes not taken off)


def current_snapshot(spark: SparkSession, target: str) -> Read:
    """``target``'s current snapshot."""
    snapshot = iceberg_table(spark, target).currentSnapshot()
    if snapshot is None:
        return Read(None, 0)
    return Read(int(snapshot.snapshotId()), _records(snapshot) or 0)


def rows_added(spark: SparkSession, target: str, before: int | None) -> int:
    """The rows the commit after snapshot ``before`` added to ``target`` (``added-records``
    of its current snapshot); 0 when there is none: a MERGE that inserted nothing may commit
    no snapshot."""
    snapshot = iceberg_table(spark, target).currentSnapshot()
    if snapshot is None or int(snapshot.snapshotId()) == before:
        return 0
    added = str(snapshot.summary().get("added-records"))
    return int(added) if added.isdigit() else 0


def snapshot_holds_rows(snapshot: Java) -> bool:
    """Whether a table's current ``snapshot`` (Java, or None) may hold rows: False only when
    there is none or its summary counts none (a summary without the count may hold rows)."""
    return snapshot is not None and _records(snapshot) != 0


def _records(snapshot: Java) -> int | None:
    """The rows a snapshot's summary counts (``total-records``; position deletes are not
    taken off it, so a table whose rows were deleted row by row still counts them); None:
    not counted."""
    rows = str(snapshot.summary().get("total-records"))
    return int(rows) if rows.isdigit() else None


def foreign_parent(
    spark: SparkSession, target: str, read: int | None, props: Mapping[str, str]
) -> int | None:
    """After the batch's MERGE (its snapshot carries ``props``): the snapshot it was committed
    on when a commit other than a file rewrite, and not the batch's, lies between ``read``
    (the snapshot the classification read) and it, or when ``read`` is no longer behind it
    (a rollback); None when there is none, or when the MERGE committed nothing."""
    table = iceberg_table(spark, target)
    snapshot = table.currentSnapshot()
    ours: Java = None
    foreign = False
    for _ in range(MAX_WALK):
        if snapshot is None:  # the history's start (or expired): ``read`` was not met
            foreign = foreign or read is not None
            break
        sid = int(snapshot.snapshotId())
        if sid == read:
            break
        summary = snapshot.summary()
        batch = summary.get(QUERY_ID) == props.get(QUERY_ID)
        batch = batch and summary.get(BATCH_ID) == props.get(BATCH_ID)
        if batch and ours is None:
            ours = snapshot
        elif not batch and ours is not None and snapshot.operation() != REWRITE:
            foreign = True
        parent = snapshot.parentId()
        snapshot = None if parent is None else table.snapshot(parent)
    else:
        foreign = True  # too far apart to tell: put back what is newer, at worst nothing
    if ours is None or not foreign:
        return None
    parent = ours.parentId()
    return None if parent is None else int(parent)


def snapshot_history(table: Java) -> Iterator[tuple[str, Mapping[str, str]]]:
    """``(operation, summary)`` of ``table``'s snapshots (Java), newest first, ``MAX_WALK``
    at most (expired parents end it)."""
    snapshot = table.currentSnapshot()
    for _ in range(MAX_WALK):
        if snapshot is None:
            return
        yield str(snapshot.operation()), snapshot.summary()
        parent = snapshot.parentId()
        snapshot = None if parent is None else table.snapshot(parent)


def snapshot_and_mark(spark: SparkSession, target: str) -> tuple[int | None, Mark]:
    """``target``'s current snapshot and the high-water mark it records, read from one
    version of its metadata (None, []: the table has no snapshot, it holds nothing)."""
    table = iceberg_table(spark, target)
    snapshot = table.currentSnapshot()
    if snapshot is None:
        return None, []
    return int(snapshot.snapshotId()), recorded(snapshot_history(table))


def empty_snapshot(spark: SparkSession, target: str) -> None:
    """Give a table that has none a first snapshot, of no rows (a tag needs a snapshot to
    name); its summary records that it holds nothing (``high_water``)."""
    table = iceberg_table(spark, target)
    if table.currentSnapshot() is None:
        table.newAppend().set(HIGH_WATER, "[]").commit()


def recorded_mark(spark: SparkSession, target: str) -> Mark:
    """The high-water mark ``target``'s snapshots record (``high_water.recorded``)."""
    return recorded(snapshot_history(iceberg_table(spark, target)))


def scanned_mark(spark: SparkSession, stored: str, n: int) -> Mark:
    """The high-water mark of what ``stored`` (a table, or one ``AS OF`` a snapshot) holds,
    read from its positions (``high_water.max_position_sql``)."""
    return scanned(first_value(spark.sql(max_position_sql(stored, n))))


def batch_commit_summary(
    spark: SparkSession, target: str, props: Mapping[str, str], keys: Iterable[str]
) -> dict[str, str]:
    """The ``keys`` that the summary of ``target``'s newest snapshot the batch of ``props``
    committed holds (empty when none is found). Only those are fetched: each entry of a Java
    map read from Python costs round trips."""
    for _, summary in snapshot_history(iceberg_table(spark, target)):
        ours = summary.get(QUERY_ID) == props.get(QUERY_ID)
        if ours and summary.get(BATCH_ID) == props.get(BATCH_ID):
            found = {key: summary.get(key) for key in keys}
            return {key: str(value) for key, value in found.items() if value is not None}
    return {}


def merge_on_read(spark: SparkSession, target: str) -> bool:
    """Whether ``target``'s MERGEs write delete files (every table cdcmirror makes)."""
    properties = iceberg_table(spark, target).properties()
    return str(properties.get("write.merge.mode")) == "merge-on-read"


# -- commits -------------------------------------------------------------------------------
# What Iceberg says when a commit's validation finds a concurrent change it cannot merge
# with (e.g. a rewrite replaced a data file a MERGE wrote position deletes for).
_CONFLICT_MARKS = (
    "ValidationException",
    "CommitFailedException",
    "Found conflicting files",
    "found new delete",
    "Cannot commit",
    "Missing required files to delete",
)


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is a commit conflict (worth a retry), judged from its message.

    >>> is_conflict(RuntimeError("org.apache.iceberg.exceptions.ValidationException: x"))
    True
    >>> is_conflict(RuntimeError("Table not found"))
    False
    """
    text = str(exc)
    return any(mark in text for mark in _CONFLICT_MARKS)


def retry_on_conflict(
    fn: Callable[[], T], what: str, attempts: int = 8, first_wait: float = 1.0
) -> T:
    """Run ``fn``; after a commit conflict wait (1 s, 2 s, 4 s ... up to 30 s) and run it
    again. ``fn`` must be safe to repeat: a conflicting commit changed nothing."""
    wait = first_wait
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:
            if attempt == attempts or not is_conflict(exc):
                raise
            logger.warning(
                "%s: commit conflict with a concurrent writer (attempt %d of %d), retrying "
                "in %.0f s: %s",
                what,
                attempt,
                attempts,
                wait,
                str(exc).splitlines()[0][:300],
            )
            time.sleep(wait)
            wait = min(wait * 2, 30.0)
    raise AssertionError("unreachable")


def with_commit_props(
    spark: SparkSession, props: Mapping[str, str], fn: Callable[[], object]
) -> None:
    """Run ``fn`` so that every snapshot it commits carries ``props`` in its summary (the
    batch's query id, batch id, Kafka offsets: ``mirror/resume.py``)."""
    java_props = java_class(spark, "java.util.HashMap")()
    for k, v in props.items():
        java_props.put(k, v)
    metadata = java_class(spark, "org.apache.iceberg.spark.CommitMetadata")
    thrown = java_class(spark, "java.lang.Class").forName("java.lang.RuntimeException")
    retry_on_conflict(  # e.g. `cdcmirror maintain` rewrote files this MERGE deletes from
        lambda: metadata.withCommitProperties(java_props, _JavaCallable(fn), thrown),
        "mirror commit",
    )


def data_commit(spark: SparkSession, props: Mapping[str, str], fn: Callable[[], object]) -> None:
    """The commit of a batch's rows into a table: :func:`with_commit_props`. Callers reach it
    through this module (``iceberg.data_commit``), so that a test can wrap it."""
    with_commit_props(spark, props, fn)


class _JavaCallable:
    """A Python function as a ``java.util.concurrent.Callable`` (through Py4J)."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self.fn = fn

    def call(self) -> None:
        self.fn()
        return None

    class Java:
        implements: ClassVar[list[str]] = ["java.util.concurrent.Callable"]


# -- the consistent point ------------------------------------------------------------------


def publish_point(spark: SparkSession, target: str, tag: str, snapshot_id: int, point: str) -> None:
    """Tag ``snapshot_id`` of ``target`` as ``tag`` (created or moved) and name the point it
    is at in the table property ``POINT_PROPERTY``, both in one metadata commit: a reader
    who sees the property sees the tag with it (``mirror/consistent_point.py``). A tagged
    snapshot is kept by every expiry (Iceberg keeps what a reference names)."""

    def commit() -> None:
        table = iceberg_table(spark, target)
        txn = table.newTransaction()
        refs = txn.manageSnapshots()
        if table.refs().containsKey(tag):
            refs.replaceTag(tag, snapshot_id)
        else:
            refs.createTag(tag, snapshot_id)
        refs.commit()
        txn.updateProperties().set(POINT_PROPERTY, point).commit()
        txn.commitTransaction()

    retry_on_conflict(commit, f"{target}: the consistent tag")


REST_CATALOG_CLASS = "org.apache.iceberg.rest.RESTCatalog"


def publish_point_at_once(
    spark: SparkSession, tag: str, chosen: Mapping[str, int], point: str
) -> bool:
    """Every table's tag (``chosen``: identifier -> snapshot id) and point property in one
    commit of the catalog, where it has one for several tables (a REST catalog serving
    Iceberg's ``transactions/commit``): a reader sees all the tables at the new point or
    none, whatever the several-tables rule. False, with nothing committed, where it has
    none; the caller then publishes table by table (:func:`publish_point`)."""
    session = spark._jsparkSession
    catalog = session.sessionState().catalogManager().catalog(CATALOG_NAME).icebergCatalog()
    if catalog.getClass().getName() != REST_CATALOG_CLASS:
        return False
    metadata = java_class(spark, "org.apache.iceberg.TableMetadata")
    refs = java_class(spark, "org.apache.iceberg.SnapshotRef")
    identifiers = java_class(spark, "org.apache.iceberg.catalog.TableIdentifier")
    table_commit = java_class(spark, "org.apache.iceberg.catalog.TableCommit")
    properties = java_class(spark, "java.util.HashMap")()
    properties.put(POINT_PROPERTY, point)

    def commit() -> None:
        commits = java_class(spark, "java.util.ArrayList")()
        for identifier, snapshot_id in chosen.items():
            base = iceberg_table(spark, spark_name(identifier)).operations().current()
            ref = refs.tagBuilder(snapshot_id).build()
            updated = metadata.buildFrom(base).setRef(tag, ref).setProperties(properties).build()
            commits.add(table_commit.create(identifiers.parse(identifier), base, updated))
        catalog.commitTransaction(commits)

    try:
        retry_on_conflict(commit, f"the consistent tag on {len(chosen)} tables")
    except Exception as exc:  # a REST server without the endpoint: nothing was sent
        if "UnsupportedOperationException" not in str(exc):
            raise
        logger.info("the REST catalog has no multi-table commit: tags move one table at a time")
        return False
    return True


def published_point(spark: SparkSession, target: str, tag: str) -> tuple[int, str] | None:
    """The snapshot ``tag`` names on ``target`` and the point its property names, read from
    one version of the table's metadata; None when either is missing."""
    table = iceberg_table(spark, target)
    ref = table.refs().get(tag)
    text = table.properties().get(POINT_PROPERTY)
    if ref is None or text is None:
        return None
    return int(ref.snapshotId()), str(text)
