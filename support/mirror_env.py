"""Helpers for the mirror tests: a seeded random workload on a real source, and the
row-by-row comparison of a source table with its Iceberg mirror (all columns)."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from support import faulty_cli, services

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
decimal.getcontext().prec = 100  # the default 28 digits would round the extreme values

# Columns of the workload table: name -> (PostgreSQL type, MariaDB type). Same values go to both.
COLUMNS: dict[str, tuple[str, str]] = {
    "name": ("text", "varchar(300)"),
    "qty": ("integer", "int"),
    "small": ("smallint", "smallint"),
    "price": ("numeric(38,10)", "decimal(38,10)"),
    "wide": ("numeric(50,10)", "decimal(65,30)"),
    "amount": ("double precision", "double"),
    "ratio": ("real", "float"),
    "flag": ("boolean", "tinyint(1)"),
    "born": ("date", "date"),
    "seen_at": ("timestamp(6)", "datetime(6)"),
    "seen3": ("timestamp(3)", "datetime(3)"),
    "at_tz": ("timestamptz", "timestamp(6) NULL"),
    "clock": ("time(6)", "time(6)"),
    "data": ("bytea", "blob"),
    "doc": ("jsonb", "longtext"),
    "note": ("text", "longtext"),
}
PG_ONLY = {"tags": "text[]", "unbounded": "numeric", "uid": "uuid"}
MARIA_ONLY = {"ubig": "bigint unsigned", "mood": "enum('sad','ok','happy')", "yr": "year"}

UNICODE = "ÆØÅ ÿ 漢字 😀 ẞ Ω"


def create_table_sql(dialect: str, table: str) -> str:
    extra = PG_ONLY if dialect == "postgresql" else MARIA_ONLY
    idx = 0 if dialect == "postgresql" else 1
    cols = [f"{n} {types[idx]}" for n, types in COLUMNS.items()]
    cols += [f"{n} {t}" for n, t in extra.items()]
    return f"CREATE TABLE {table} (id bigint PRIMARY KEY, {', '.join(cols)})"


class Values:
    """Seeded random column values, extremes and NULLs included. ``incompressible`` adds big
    random text and bytes, which PostgreSQL stores out of line (TOAST) instead of compressing
    them inline, so updates that leave them alone stream the unchanged-TOAST placeholder."""

    def __init__(self, dialect: str, seed: int, incompressible: bool = False) -> None:
        self.dialect = dialect
        self.rnd = random.Random(seed)
        self.incompressible = incompressible

    def _noise(self, chars: int) -> str:
        return f"{self.rnd.getrandbits(4 * chars):0{chars}x}"

    def _pick(self, choices: Sequence[Any], nulls: float = 0.1) -> Any:
        if self.rnd.random() < nulls:
            return None
        return self.rnd.choice(choices)

    def column(self, name: str) -> Any:
        r = self.rnd
        pg = self.dialect == "postgresql"
        if name == "name":
            return self._pick(["", "a", UNICODE, "x" * r.randint(1, 290), f"n{r.random()}"])
        if name == "qty":
            return self._pick([0, -1, 2**31 - 1, -(2**31), r.randint(-1000, 1000)])
        if name == "small":
            return self._pick([0, 32767, -32768, r.randint(-100, 100)])
        if name == "price":
            top = Decimal("9999999999999999999999999999.9999999999")
            return self._pick(
                [top, -top, Decimal("0.0000000001"), Decimal(r.randint(-(10**9), 10**9)) / 1000]
            )
        if name == "wide":
            wide = "9" * 40 + "." + "9" * 10 if pg else "9" * 35 + "." + "9" * 30
            return self._pick(
                [
                    Decimal(wide),
                    -Decimal(wide),
                    Decimal("1.5"),
                    Decimal(r.randint(0, 10**12)) / 7 // 1,
                ]
            )
        if name == "unbounded":
            return self._pick(
                [
                    Decimal("12345678901234567890.123456789012345"),
                    Decimal("-0.5"),
                    Decimal(r.randint(0, 99)),
                ]
            )
        if name == "amount":
            return self._pick([0.0, 1e300, -1e-300, r.uniform(-1e6, 1e6)])
        if name == "ratio":
            return self._pick([0.5, -3.25, 1e30, float(r.randint(-100, 100))])
        if name == "flag":
            return self._pick([True, False])
        if name == "born":
            return self._pick(
                [
                    dt.date(1, 1, 1),
                    dt.date(9999, 12, 31),
                    dt.date(1970, 1, 1),
                    dt.date(2000 + r.randint(0, 30), r.randint(1, 12), r.randint(1, 28)),
                ]
            )
        if name in ("seen_at", "seen3"):
            micro = r.randint(0, 999999) if name == "seen_at" else r.randint(0, 999) * 1000
            far = dt.datetime(1000 if not pg else 1, 1, 1)
            return self._pick(
                [
                    far,
                    dt.datetime(9999, 12, 31, 23, 59, 59, micro),
                    dt.datetime(2024, r.randint(1, 12), 3, 4, 5, 6, micro),
                ]
            )
        if name == "at_tz":
            if pg:
                return self._pick(
                    [
                        dt.datetime(1, 1, 1, tzinfo=dt.UTC),
                        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
                        dt.datetime(2024, 5, 6, 7, 8, 9, r.randint(0, 999999), tzinfo=dt.UTC),
                    ]
                )
            return self._pick(
                [
                    dt.datetime(1970, 1, 2),
                    dt.datetime(2038, 1, 18, 3, 14, 7, 999999),
                    dt.datetime(2024, 5, 6, 7, 8, 9, r.randint(0, 999999)),
                ]
            )
        if name == "clock":
            return self._pick(
                [
                    dt.time(0, 0),
                    dt.time(23, 59, 59, 999999),
                    dt.time(r.randint(0, 23), r.randint(0, 59), 1, r.randint(0, 999999)),
                ]
            )
        if name == "data":
            small = bytes(r.getrandbits(8) for _ in range(r.randint(1, 64)))
            big = [r.randbytes(r.randint(3000, 9000))] if self.incompressible else []
            return self._pick([b"", b"\x00\xff\x80", small, *big])
        if name == "doc":
            return self._pick(['{"a": 1}', '{"s": "' + UNICODE + '"}', "[]", '{"n": null}'])
        if name == "note":
            noise = [self._noise(r.randint(3000, 12000))] if self.incompressible else []
            return self._pick(["short", UNICODE * 3, "y" * r.randint(3000, 12000), *noise])
        if name == "tags":
            return self._pick([[], ["a", "b"], [UNICODE], ["x" * 100]])
        if name == "uid":
            return self._pick(
                [
                    "00000000-0000-0000-0000-000000000000",
                    "ffffffff-ffff-ffff-ffff-ffffffffffff",
                    f"{r.getrandbits(128):032x}",
                ]
            )
        if name == "ubig":
            return self._pick([0, 18446744073709551615, 2**63, r.randint(0, 10**6)])
        if name == "mood":
            return self._pick(["sad", "ok", "happy"])
        if name == "yr":
            return self._pick([1901, 2155, 2024])
        if name.startswith("added_"):  # a column a schema change added mid-stream (int)
            return self._pick([0, -1, 2**31 - 1, r.randint(-1000, 1000)])
        raise KeyError(name)

    def row(self, names: Sequence[str]) -> dict[str, Any]:
        return {n: self.column(n) for n in names}


def all_columns(dialect: str) -> list[str]:
    extra = PG_ONLY if dialect == "postgresql" else MARIA_ONLY
    return [*COLUMNS, *extra]


@dataclass
class Source:
    """One source table and two connections to it (for interleaved transactions)."""

    dialect: str
    table: str  # qualified for the dialect's SQL
    connect: Callable[[], Any]

    def param(self) -> str:
        return "%s"


def _adapt(dialect: str, value: Any) -> Any:
    if dialect == "postgresql" and isinstance(value, str) and value.startswith(("{", "[")):
        import json

        from psycopg.types.json import Jsonb

        return Jsonb(json.loads(value))
    return value


class Workload:
    """Seeded random inserts, updates, deletes, key changes, multi-row and interleaved
    transactions. Keeps the ids it believes exist to choose targets; the truth is the source.

    ``chains`` makes it meaner: big incompressible values (out-of-line TOAST on PostgreSQL)
    and more key changes, half of them re-keying a row that was just re-keyed (A→B→C…), so
    chains of key changes with unchanged-TOAST updates between them land in one batch."""

    def __init__(self, src: Source, seed: int, first_id: int = 1, chains: bool = False) -> None:
        self.src = src
        self.values = Values(src.dialect, seed, incompressible=chains)
        self.rnd = self.values.rnd
        self.next_id = first_id
        self.ids: list[int] = []
        self.columns = all_columns(src.dialect)
        self.chains = chains
        self.rekeyed: list[int] = []  # keys made by a key change, newest last

    def _insert(self, cur: Any) -> None:
        i = self.next_id
        self.next_id += 1
        row = self.values.row(self.columns)
        names = ["id", *row]
        marks = ", ".join(["%s"] * len(names))
        values = [i, *(_adapt(self.src.dialect, v) for v in row.values())]
        cur.execute(f"INSERT INTO {self.src.table} ({', '.join(names)}) VALUES ({marks})", values)
        self.ids.append(i)

    def _update(self, cur: Any) -> None:
        i = self.rnd.choice(self.ids)
        names = self.rnd.sample(self.columns, self.rnd.randint(1, 4))
        row = self.values.row(names)
        sets = ", ".join(f"{n} = %s" for n in row)
        values = [*(_adapt(self.src.dialect, v) for v in row.values()), i]
        cur.execute(f"UPDATE {self.src.table} SET {sets} WHERE id = %s", values)

    def _delete(self, cur: Any) -> None:
        i = self.rnd.choice(self.ids)
        cur.execute(f"DELETE FROM {self.src.table} WHERE id = %s", (i,))
        self.ids.remove(i)

    def _rekey(self, cur: Any) -> None:
        recent = [i for i in self.rekeyed[-5:] if i in self.ids]
        if self.chains and recent and self.rnd.random() < 0.5:
            old = self.rnd.choice(recent)
        else:
            old = self.rnd.choice(self.ids)
        new = self.next_id
        self.next_id += 1
        cur.execute(f"UPDATE {self.src.table} SET id = %s WHERE id = %s", (new, old))
        self.ids.remove(old)
        self.ids.append(new)
        self.rekeyed.append(new)

    def _one(self, cur: Any) -> None:
        p = self.rnd.random()
        rekey = 0.8 if self.chains else 0.9
        if len(self.ids) < 20 or p < 0.35:
            self._insert(cur)
        elif p < 0.75:
            self._update(cur)
        elif p < rekey:
            self._delete(cur)
        else:
            self._rekey(cur)

    def run(self, operations: int) -> None:
        """``operations`` statements: single ones, multi-statement transactions, and pairs
        of transactions interleaved on two connections (on disjoint keys)."""
        decimal.getcontext().prec = 100  # the context is per thread; a workload thread too
        a, b = self.src.connect(), self.src.connect()
        try:
            done = 0
            while done < operations:
                kind = self.rnd.random()
                if kind < 0.5:
                    with _cursor(a) as cur:
                        self._one(cur)
                    done += 1
                elif kind < 0.8:
                    n = self.rnd.randint(2, 10)
                    with _transaction(a) as cur:
                        for _ in range(n):
                            self._one(cur)
                    done += n
                else:
                    done += self._interleaved(a, b)
        finally:
            a.close()
            b.close()

    def _interleaved(self, a: Any, b: Any) -> int:
        """Two open transactions, statements alternating, committed in random order. Each
        works on keys the other does not touch (fresh inserts, then its own updates)."""
        n = 0
        with _transaction(a) as ca, _transaction(b) as cb:
            mine: dict[int, list[int]] = {0: [], 1: []}
            for step in range(self.rnd.randint(4, 12)):
                side = step % 2
                cur = ca if side == 0 else cb
                if mine[side] and self.rnd.random() < 0.5:
                    i = self.rnd.choice(mine[side])
                    row = self.values.row(self.rnd.sample(self.columns, 2))
                    sets = ", ".join(f"{c} = %s" for c in row)
                    vals = [*(_adapt(self.src.dialect, v) for v in row.values()), i]
                    cur.execute(f"UPDATE {self.src.table} SET {sets} WHERE id = %s", vals)
                else:
                    self._insert(cur)
                    mine[side].append(self.ids[-1])
                n += 1
        return n


class _cursor:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def __enter__(self) -> Any:
        self.cur = self.conn.cursor()
        return self.cur

    def __exit__(self, *exc: Any) -> None:
        self.cur.close()


class _transaction:
    """BEGIN ... COMMIT on a connection in autocommit mode (psycopg or PyMySQL)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def __enter__(self) -> Any:
        self.cur = self.conn.cursor()
        self.cur.execute("BEGIN")
        return self.cur

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.cur.execute("ROLLBACK" if exc_type else "COMMIT")
        self.cur.close()


# -- comparison ---------------------------------------------------------------------------


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _micros_of_day(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def canonical(dialect: str, name: str, value: Any) -> Any:
    """One comparable form of a value, whichever side it came from."""
    if value is None:
        return None
    if name in ("wide", "unbounded", "price", "ubig"):
        return Decimal(str(value)).normalize()
    if name == "ratio":
        return _f32(float(value))
    if name in ("data",):
        return bytes(value)
    if name == "doc":
        import json

        return json.loads(value) if isinstance(value, str) else value
    if name == "clock":
        if isinstance(value, dt.timedelta):
            return value // dt.timedelta(microseconds=1)
        return _micros_of_day(value) if isinstance(value, dt.time) else int(value)
    if name == "at_tz":
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:  # MariaDB timestamp: the session time zone is UTC
                value = value.replace(tzinfo=dt.UTC)
            return (value - EPOCH) // dt.timedelta(microseconds=1)
        return int(value)
    if name == "flag":
        return bool(value)
    if name == "tags":
        return list(value)
    if name == "uid":
        return str(value)
    return value


def source_rows(src: Source, columns: list[str]) -> dict[Any, tuple[Any, ...]]:
    conn = src.connect()
    try:
        cur = conn.cursor()
        if src.dialect == "mysql":
            cur.execute("SET time_zone = '+00:00'")
        cur.execute(f"SELECT id, {', '.join(columns)} FROM {src.table}")
        rows = cur.fetchall()
    finally:
        conn.close()
    return {
        r[0]: tuple(canonical(src.dialect, c, v) for c, v in zip(columns, r[1:], strict=True))
        for r in rows
    }


def mirror_rows(
    spark: Any, identifier: str, columns: list[str], dialect: str
) -> dict[Any, tuple[Any, ...]]:
    exprs = [f"unix_micros(`{c}`) AS `{c}`" if c == "at_tz" else f"`{c}`" for c in columns]
    df = spark.sql(
        f"SELECT id, {', '.join(exprs)} FROM {identifier} WHERE NOT coalesce(_cdc_deleted, false)"
    )
    rows = df.collect()
    out = {}
    for r in rows:
        assert r[0] not in out, f"{identifier}: key {r[0]} appears twice"
        out[r[0]] = tuple(canonical(dialect, c, v) for c, v in zip(columns, r[1:], strict=True))
    return out


def assert_same(src: Source, spark: Any, identifier: str, columns: list[str]) -> int:
    """The Iceberg table equals the source, row by row, every listed column. Returns rows."""
    expected = source_rows(src, columns)
    assert_rows_equal(
        identifier, columns, expected, mirror_rows(spark, identifier, columns, src.dialect)
    )
    return len(expected)


def assert_rows_equal(
    what: str, columns: list[str], want: dict[Any, tuple[Any, ...]], got: dict[Any, tuple[Any, ...]]
) -> None:
    """``got`` (the mirror's, by key) equals ``want`` (the source's), row by row."""
    missing = sorted(set(want) - set(got))[:5]
    extra = sorted(set(got) - set(want))[:5]
    assert not missing and not extra, f"{what}: missing keys {missing}, extra keys {extra}"
    for key, row in want.items():
        if got[key] != row:
            diffs = [(c, e, a) for c, e, a in zip(columns, row, got[key], strict=True) if e != a]
            raise AssertionError(f"{what} id={key}: (column, source, mirror) {diffs[:3]}")


def run_mirror_process(
    config: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``cdcmirror mirror --available-now`` in its own process (for kill/restart tests)."""
    full_env = {**os.environ, "CDCMIRROR_SOURCE__PASSWORD": services.CDC_PASSWORD, **(env or {})}
    return subprocess.run(
        [
            sys.executable,
            *faulty_cli.command(full_env),
            "--config",
            str(config),
            "mirror",
            "--available-now",
        ],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def causes(log: str, keep: int = 3000) -> str:
    """A failed job's log cut to what explains it: its error lines and each ``Caused by``
    of the Java traces (the traces themselves run to thousands of lines), then the end."""
    lines = log.splitlines()
    telling = [
        line[:400]
        for line in lines
        if line.startswith(("error:", "Caused by:", "ERROR", "Traceback"))
        or "Exception:" in line[:200]
    ]
    return "\n".join(dict.fromkeys(telling))[-keep:] + "\n...\n" + log[-keep:]


class MirrorJob:
    """The continuous ``cdcmirror mirror`` job in its own process. Its stderr goes to a file
    (a pipe nobody reads would fill up and block the job); ``output`` holds it once the job
    has ended."""

    def __init__(
        self,
        config: Path,
        trigger: str,
        extra_env: dict[str, str] | None,
        keep_log: Path | None = None,
    ) -> None:
        """``keep_log``: append stderr there and keep it (else a temporary file)."""
        env = {
            **os.environ,
            "CDCMIRROR_SOURCE__PASSWORD": services.CDC_PASSWORD,
            "CDCMIRROR_MIRROR__TRIGGER": trigger,
            **(extra_env or {}),
        }
        if keep_log is None:
            fd, name = tempfile.mkstemp(prefix="cdcmirror-job-", suffix=".log")
            os.close(fd)
        self.log = keep_log or Path(name)
        self.keep = keep_log is not None
        self.output = ""
        with self.log.open("a") as err:
            self.proc = subprocess.Popen(
                [sys.executable, *faulty_cli.command(env), "--config", str(config), "mirror"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )

    def assert_alive(self) -> None:
        if self.proc.poll() is not None:
            self._finish()
            raise AssertionError(f"the mirror job ended early: {causes(self.output)}")

    def wait_for(self, text: str, timeout: float = 180.0) -> None:
        """Until the job's log holds ``text``; the job must stay alive meanwhile."""
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text(errors="replace"):
            self.assert_alive()
            assert time.monotonic() < deadline, f"the job never logged {text!r}"
            time.sleep(0.5)

    def _finish(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.log.exists():
            self.output = self.log.read_text(errors="replace")
            if not self.keep:
                self.log.unlink()

    def stop(self, timeout: float = 180) -> None:
        """SIGTERM: the job finishes its batch and must exit 0."""
        self.proc.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout)
        self._finish()
        assert self.proc.returncode == 0, self.output[-3000:]


@contextmanager
def continuous_mirror(
    config: Path, trigger: str = "2 seconds", extra_env: dict[str, str] | None = None
) -> Iterator[MirrorJob]:
    """The continuous job for the ``with`` block: stopped by SIGTERM at the end (exit 0
    asserted), killed when the block fails."""
    job = MirrorJob(config, trigger, extra_env)
    try:
        yield job
    except BaseException:
        job._finish()
        raise
    job.stop()
