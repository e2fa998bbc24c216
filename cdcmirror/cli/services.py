"""`cdcmirror stack`, `jars` and `check`: the services the mirror needs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from cdcmirror import dialects
from cdcmirror.cli.root import _say, cli, handle_errors, slot_warnings
from cdcmirror.exceptions import EXIT_DRIFT


@cli.group()
def stack() -> None:
    """The local Kafka (KRaft) + Kafka Connect (Debezium) stack, on loopback, without Docker."""


def _print_status(ctx: click.Context, statuses: list[Any]) -> None:
    if ctx.obj["output"] == "json":
        click.echo(json.dumps([s.as_dict() for s in statuses], indent=2))
        return
    width = max(len(s.name) for s in statuses)
    click.echo(f"{'part':<{width}} {'state':<10} {'address':<24} {'pid':<8} log")
    for s in statuses:
        click.echo(f"{s.name:<{width}} {s.state:<10} {s.address:<24} {s.pid or '-':<8} {s.log}")


@stack.command("up")
@click.option(
    "--cluster",
    is_flag=True,
    help="Also the cluster profile: an S3 store (http://127.0.0.1:7070), an Iceberg REST "
    "catalog (http://127.0.0.1:8181), a Spark standalone master (spark://127.0.0.1:7077) "
    "and two workers.",
)
@click.pass_context
@handle_errors
def stack_up(ctx: click.Context, cluster: bool) -> None:
    """Start the broker, the registry and the Connect worker (idempotent); return when all
    are healthy."""
    from cdcmirror.stack.control import Stack

    _print_status(ctx, Stack().up(progress=_say, with_cluster=cluster))


@stack.command("down")
@handle_errors
def stack_down() -> None:
    """Stop the processes `stack up` started."""
    from cdcmirror.stack.control import Stack

    Stack().down(progress=_say)


@stack.command("status")
@click.pass_context
@handle_errors
def stack_status(ctx: click.Context) -> None:
    """Show each part, its address and pid; exit 1 unless every part is healthy."""
    from cdcmirror.stack.control import Stack

    statuses = Stack().status()
    _print_status(ctx, statuses)
    if any(s.state != "healthy" for s in statuses):
        sys.exit(EXIT_DRIFT)


@cli.group()
def jars() -> None:
    """The pinned JVM jars (cdcmirror/jvm/manifest.toml) and their cache."""


@jars.command("resolve")
@click.argument("groups", nargs=-1)
@click.pass_context
@handle_errors
def jars_resolve(ctx: click.Context, groups: tuple[str, ...]) -> None:
    """Download the jar groups (all by default) from Maven Central unless already cached;
    build cdcmirror's own JVM parts with the JDK (``jvm/java_parts.py``): the local file
    system for Spark, the MariaDB UUID converter, the REST catalog's loopback launcher; make
    the class-data archive Spark's driver JVM maps its classes from (``jvm/class_archive.py``)."""
    from cdcmirror.jvm.java_parts import PARTS
    from cdcmirror.jvm.local_fs import build_jar
    from cdcmirror.jvm.resolve import resolve_all

    result = resolve_all(names=groups or None, progress=_say)
    if not groups or "spark" in groups:
        built = build_jar(progress=_say)
        if built is not None:
            result["local-fs"] = built.parent
        archive = _class_archive()
        if archive is not None:
            result["class-archive"] = archive
    for part in PARTS:
        made = part.build(progress=_say) if part.classpath() is not None else None
        if made is not None:
            result[part.name] = made
    if ctx.obj["output"] == "json":
        click.echo(json.dumps({k: str(v) for k, v in result.items()}, indent=2))
    else:
        for name, path in result.items():
            click.echo(f"{name:<20} {path}")


def _class_archive() -> Path | None:
    """The Spark driver JVM's class-data archive (``jvm/class_archive.py``), made for the
    sessions of a configuration that names no jars of its own, in a scratch directory."""
    import tempfile

    from cdcmirror.config.catalog import ensure_embedded_catalog_dirs
    from cdcmirror.config.load import load_config
    from cdcmirror.jvm.class_archive import build
    from cdcmirror.spark.session import session_conf

    with tempfile.TemporaryDirectory(prefix="cdcmirror-archive-") as scratch:
        config = load_config(environ={}, cwd=Path(scratch))
        ensure_embedded_catalog_dirs(config)
        return build(session_conf(config, "cdcmirror-class-archive"), _say)


@jars.command("submit")
@click.pass_context
@handle_errors
def jars_submit(ctx: click.Context) -> None:
    """The spark-submit arguments that run cdcmirror: --jars (the pinned Spark jars,
    downloaded first if needed) and the Python entry point, for
    `spark-submit --master URL $(cdcmirror jars submit) --config cdcmirror.toml mirror`."""
    from cdcmirror.config import load_config
    from cdcmirror.jvm.resolve import resolve_all
    from cdcmirror.spark.session import spark_jars

    entry = str(Path(__file__).parent.parent / "submit.py")  # a script, not imported
    resolve_all(names=["spark"], progress=_say)
    paths = spark_jars(load_config(ctx.obj["config_path"]))
    if ctx.obj["output"] == "json":
        click.echo(json.dumps({"jars": paths, "entry": entry}, indent=2))
    else:
        click.echo(f"--jars {','.join(paths)} {entry}")


@cli.command("check")
@click.pass_context
@handle_errors
def check(ctx: click.Context) -> None:
    """Check that the configured Kafka, Kafka Connect (and, for Avro, the schema registry)
    answer; exit 2 when one does not."""
    from cdcmirror.commands.kafka_access import client_conf, require_login
    from cdcmirror.config import load_config
    from cdcmirror.exceptions import ServiceUnavailableError
    from cdcmirror.stack import health

    config = load_config(ctx.obj["config_path"])
    kafka = config.kafka.bootstrap_servers
    connect = config.connect.url
    require_login(config, timeout=5.0)
    if not health.broker_answers_metadata(client_conf(config), timeout=5.0):
        raise ServiceUnavailableError(
            f"Kafka at {kafka} does not answer; start it (`cdcmirror stack up`) or fix "
            "kafka.bootstrap_servers"
        )
    click.echo(f"kafka    ok  {kafka}")
    plugins = health.connect_plugins(connect, timeout=5.0, auth=config.connect.auth)
    if plugins is None:
        raise ServiceUnavailableError(
            f"Kafka Connect at {connect} does not answer; start it (`cdcmirror stack up`) "
            "or fix connect.url"
        )
    debezium = sorted(p for p in plugins if p.startswith("io.debezium."))
    click.echo(f"connect  ok  {connect}  ({len(debezium)} Debezium connectors)")
    from cdcmirror.bootstrap.connector import connector_name
    from cdcmirror.clients.connect import ConnectClient
    from cdcmirror.exceptions import ConnectorError
    from cdcmirror.health.connector import connector_problem

    name = connector_name(config.source.name)
    problem = None
    if name not in ConnectClient.of(config.connect).names():
        click.echo(f"connector -- {name} is not registered yet (`cdcmirror bootstrap` does it)")
    else:
        problem = connector_problem(config.connect, name)
        if not problem:
            click.echo(f"connector ok {name} RUNNING")
    binlog = None
    if dialects.of(config.source.dialect).binlog:
        from cdcmirror.health.binlog import binlog_health
        from cdcmirror.source.connection import open_engine

        engine = open_engine(config.source)
        try:
            binlog = binlog_health(engine, config.connect, name)
        finally:
            engine.dispose()
        if not binlog:
            click.echo("binlog   ok  ROW, FULL row image, not compressed, connector inside history")
    if problem or binlog:  # both: a failed task may be the sign of a reset binlog
        raise ConnectorError("; ".join(p for p in (problem, binlog) if p))
    for warning in slot_warnings(config):
        click.echo(f"warning: {warning}", err=True)
    if config.kafka.avro:
        from cdcmirror.commands.bootstrap import require_registry

        click.echo(f"registry ok  {require_registry(config)}")
