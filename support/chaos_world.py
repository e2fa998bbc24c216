"""The world of the chaos run (``support/chaos.py``): one mirrored table per source
dialect, each with its own continuous `cdcmirror mirror` process, a writer thread running
the seeded random workload, and a row-by-row comparison that counts what differs (lost,
duplicated, resurrected and wrong rows) instead of stopping at the first difference."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdcmirror.catalog import load_catalog
from cdcmirror.config import load_config
from support import services
from support.bootstrap_env import run_cli
from support.mirror_env import (
    MirrorJob,
    Source,
    Workload,
    all_columns,
    canonical,
    source_rows,
)
from support.mirror_fixture import make_config

Rows = dict[Any, tuple[Any, ...]]


@dataclass
class Diff:
    """How a mirrored table differs from its source, row by row."""

    lost: int = 0  # in the source, not in the mirror
    duplicated: int = 0  # a key the mirror holds more than once
    resurrected: int = 0  # in the mirror, gone from the source
    wrong: int = 0  # in both, some column differs
    examples: list[str] = field(default_factory=list)
    error: str | None = None  # the comparison itself failed (a source restarting)
    keys: set[Any] = field(default_factory=set)  # the keys that differ

    @property
    def clean(self) -> bool:
        bad = self.lost or self.duplicated or self.resurrected or self.wrong or self.error
        return not bad


def diff_rows(
    expected: Rows, actual: list[tuple[Any, tuple[Any, ...]]], ignore: frozenset[Any] = frozenset()
) -> Diff:
    """Compare the source's rows with the mirror's (key, row) pairs; keys in ``ignore`` (found
    after an earlier fault, counted there) are left out.

    >>> d = diff_rows({1: ("a",), 2: ("b",), 3: ("c",)}, [(1, ("a",)), (1, ("a",)),
    ...     (2, ("x",)), (4, ("d",))])
    >>> (d.lost, d.duplicated, d.resurrected, d.wrong, sorted(d.keys))
    (1, 1, 1, 1, [1, 2, 3, 4])
    >>> diff_rows({1: ("a",), 3: ("c",)}, [(1, ("a",))], frozenset({3})).clean
    True
    """
    out = Diff()
    expected = {k: v for k, v in expected.items() if k not in ignore}
    actual = [(k, v) for k, v in actual if k not in ignore]
    seen: dict[Any, tuple[Any, ...]] = {}
    for key, row in actual:
        if key in seen:
            out.duplicated += 1
            out.keys.add(key)
            out.examples.append(f"key {key} twice")
        seen[key] = row
    for key, row in expected.items():
        if key not in seen:
            out.lost += 1
            out.keys.add(key)
            out.examples.append(f"key {key} lost")
        elif seen[key] != row:
            out.wrong += 1
            out.keys.add(key)
            diffs = [(i, e, a) for i, (e, a) in enumerate(zip(row, seen[key], strict=True))]
            out.examples.append(f"key {key}: {[d for d in diffs if d[1] != d[2]][:2]}")
    for key in seen.keys() - expected.keys():
        out.resurrected += 1
        out.keys.add(key)
        out.examples.append(f"key {key} resurrected")
    out.examples = out.examples[:5]
    return out


class MirrorProcess(MirrorJob):
    """One continuous `cdcmirror mirror` process (trigger 2 s); its stderr is appended to
    ``log`` and kept."""

    def __init__(self, config: Path, log: Path, env: dict[str, str] | None = None) -> None:
        with log.open("a") as out:
            out.write(f"\n--- started {time.strftime('%H:%M:%S')} env {sorted(env or {})}\n")
        super().__init__(config, "2 seconds", env, keep_log=log)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        self._finish()

    def terminate(self, timeout: float = 180) -> int:
        """SIGTERM: the job finishes its batch and exits (its exit code)."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout)
        self._finish()
        return int(self.proc.returncode)


class Writer(threading.Thread):
    """Runs the workload in small steps until stopped; ``pause`` returns once no transaction
    is open. Errors (the source restarting) are counted and the writer goes on."""

    def __init__(self, workload: Workload, pace: float) -> None:
        super().__init__(daemon=True, name="chaos-writer")
        self.workload, self.pace = workload, pace
        self.errors = 0
        self._paused = threading.Event()
        self._idle = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # held while a step writes (schema changes wait on it)

    def run(self) -> None:
        while not self._stopped.is_set():
            if self._paused.is_set():
                self._idle.set()
                time.sleep(0.1)
                continue
            self._idle.clear()
            with self._lock:
                try:
                    self.workload.run(4)
                except Exception:  # the source is restarting: try again shortly
                    self.errors += 1
                    time.sleep(1)
            time.sleep(self.pace)

    def pause(self) -> None:
        self._paused.set()
        self._idle.clear()
        while self.is_alive() and not self._idle.wait(1):
            pass

    def resume(self) -> None:
        self._paused.clear()

    def finish(self) -> None:
        self._stopped.set()
        self.join(timeout=60)


@dataclass
class Side:
    """One source dialect: its table, workload, config and mirror process."""

    label: str
    name: str  # schema / database, also the connector's and namespace's prefix
    source: Source
    workload: Workload
    config: Path
    work: Path
    columns: list[str]
    teardown: Callable[[], None]
    job: MirrorProcess | None = None
    writer: Writer | None = None
    exits: list[str] = field(default_factory=list)  # how mirror processes ended on their own
    widened: bool = False  # qty int -> bigint done
    known_bad: set[Any] = field(default_factory=set)  # keys counted after an earlier fault

    @property
    def identifier(self) -> str:
        return f"{self.name}_mirror.items"

    @property
    def connector(self) -> str:
        return f"cdcmirror-{self.name}"

    @property
    def log(self) -> Path:
        return self.work / "mirror.log"

    @property
    def checkpoint(self) -> Path:
        return Path(str(load_config(self.config, environ={}).path("mirror", "checkpoint_location")))

    def start(self, env: dict[str, str] | None = None) -> MirrorProcess:
        self.job = MirrorProcess(self.config, self.log, env)
        return self.job

    def ensure_running(self) -> None:
        """Restart the mirror if it ended on its own (the end is noted with its last line)."""
        if self.job is not None and not self.job.alive():
            lines = self.log.read_text(errors="replace").strip().splitlines()
            self.exits.append(f"exit {self.job.proc.returncode}: {lines[-1] if lines else ''}")
            self.start()

    def diff(self) -> Diff | None:
        """The comparison now; None when the mirror lacks a column the source has (a schema
        change not mirrored yet)."""
        expected = source_rows(self.source, self.columns)
        catalog = load_catalog(load_config(self.config, environ={}))
        table = catalog.load_table(self.identifier)
        names = {f.name for f in table.schema().fields}
        if not set(self.columns) <= names:
            return None
        data = table.scan(selected_fields=("id", "_cdc_deleted", *self.columns)).to_arrow()
        dialect = self.source.dialect
        actual = [
            (r["id"], tuple(canonical(dialect, c, r[c]) for c in self.columns))
            for r in data.to_pylist()
            if not r["_cdc_deleted"]
        ]
        return diff_rows(expected, actual, frozenset(self.known_bad))

    def connector_failed(self) -> list[str]:
        status = services.connect_client().status(self.connector)
        states = [status["connector"], *status["tasks"]]
        return [str(s.get("trace", "")).split("\n")[0] for s in states if s["state"] == "FAILED"]


def pg_side(work: Path, seed: int, settings: dict[str, Any]) -> Side:
    schema = services.unique("chaos_pg")
    with services.pg_connect() as conn:
        from support.mirror_env import create_table_sql

        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(create_table_sql("postgresql", f"{schema}.items"))
        services.publish_schema(conn, schema)
    source = Source("postgresql", f"{schema}.items", services.pg_connect)
    return _side(
        "postgresql",
        schema,
        source,
        work,
        seed,
        services.TEST_DATABASE,
        settings,
        lambda: services.drop_published_schema(schema, f"cdcmirror-{schema}"),
    )


def maria_side(work: Path, seed: int, settings: dict[str, Any]) -> Side:
    from support.mirror_env import create_table_sql

    database = services.unique("chaos_maria")
    admin = services.maria_connect()
    with admin.cursor() as cur:
        services.maria_database(cur, database)
        cur.execute(create_table_sql("mysql", f"{database}.items") + " CHARACTER SET utf8mb4")
    admin.close()

    def drop() -> None:
        services.connect_client().delete(f"cdcmirror-{database}")
        conn = services.maria_connect()
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE {database}")
        conn.close()

    source = Source("mysql", f"{database}.items", lambda: services.maria_connect(database))
    return _side("mariadb", database, source, work, seed, database, settings, drop)


def _side(
    label: str,
    name: str,
    source: Source,
    work: Path,
    seed: int,
    url_db: str,
    settings: dict[str, Any],
    teardown: Callable[[], None],
) -> Side:
    work = work / label
    work.mkdir(parents=True, exist_ok=True)  # its own catalog: the two jobs are independent
    # chains: big incompressible values (out-of-line TOAST) and chains of key changes
    chains = bool(settings.get("chains", source.dialect == "postgresql"))
    workload = Workload(source, seed, chains=chains)
    workload.run(int(settings.get("rows", 200)))  # these arrive through the initial snapshot
    config = make_config(
        work,
        name,
        source.dialect,
        f"{name}.*",
        url_db,
        kafka_format=settings.get("format", "json"),
        maintain={
            "every_batches": int(settings.get("maintain_every", 0)),
            "max_snapshots": int(settings.get("max_snapshots", 1000)),
        },
    )
    result = run_cli(config, "bootstrap")
    (work / "bootstrap.log").write_text(result.output)
    assert result.exit_code == 0, result.output
    columns = all_columns(source.dialect)
    return Side(label, name, source, workload, config, work, columns, teardown)
