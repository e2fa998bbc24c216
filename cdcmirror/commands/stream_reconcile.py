"""``cdcmirror reconcile`` for the plain event streams (``[[streams]]``): per topic
partition, the events Kafka holds up to the table's last offset against its rows
(``streams/reconcile.py``)."""

from __future__ import annotations

from collections.abc import Callable

from cdcmirror.commands.kafka_access import client_conf, spark_options
from cdcmirror.config import Config
from cdcmirror.exceptions import ServiceUnavailableError
from cdcmirror.streams.reconcile import PartitionCheck, StreamCheck


def reconcile_streams(
    config: Config, only: list[str] | None, limit: int, progress: Callable[[str], None]
) -> list[StreamCheck]:
    from cdcmirror.catalog import load_catalog
    from cdcmirror.commands.job_tables import internal_namespace
    from cdcmirror.commands.streams import job_streams, stream_topics
    from cdcmirror.spark.session import build_spark_session
    from cdcmirror.spark.streams.reconcile import compare_stream
    from cdcmirror.stack.health import committed_end_offsets

    streams = job_streams(config, load_catalog(config), only)
    if not streams.tables:
        return []
    bootstrap = config.kafka.bootstrap_servers
    topics = {t.identifier: stream_topics(config, t.spec) for t in streams.tables}
    every = sorted({name for names in topics.values() for name in names})
    try:
        firsts = committed_end_offsets(client_conf(config), every, earliest=True)
        ends = committed_end_offsets(client_conf(config), every)
    except Exception as exc:
        raise ServiceUnavailableError(
            f"Kafka at {bootstrap} does not answer ({exc}); start it or fix kafka.bootstrap_servers"
        ) from exc
    progress("starting Spark")
    spark = build_spark_session(config, "cdcmirror-reconcile")
    dead = f"{internal_namespace(config)}.dead_letter"
    checks = []
    for t in streams.tables:
        progress(f"stream {t.identifier}")
        check = StreamCheck(t.identifier, bool(t.spec.key_columns))
        for topic in topics[t.identifier]:
            for p in sorted(ends.get(topic, {})):
                held = t.held.get(topic, {}).get(p)
                first = firsts.get(topic, {}).get(p, 0)
                check.partitions.append(PartitionCheck(topic, p, first, ends[topic][p], held))
        if not check.keyed:
            options = spark_options(config)
            compare_stream(spark, options, t.identifier, dead, check.partitions, limit)
        checks.append(check)
    return checks
