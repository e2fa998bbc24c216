"""Benchmark: `cdcmirror bootstrap` over many PostgreSQL tables (default 200).

Creates a schema of N tables (12 columns of mixed types each) in the cdcmirror_it database,
runs bootstrap twice (the first creates N Iceberg tables and registers the connector, the
second is the no-op re-run), prints the time of each phase, then removes everything.
Needs the provisioned PostgreSQL and the stack (`make provision stack-up`).

    .venv/bin/python benchmarks/bootstrap_tables.py [N]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from cdcmirror.commands.bootstrap import bootstrap
from cdcmirror.config import load_config
from support import services

COLUMNS = (
    "id bigint PRIMARY KEY, a integer, b numeric(12,2), c text, d varchar(40), e timestamptz, "
    "f timestamp, g date, h boolean, i jsonb, j uuid, k double precision"
)


def main(count: int) -> None:
    schema = services.unique("bench")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        for i in range(count):
            conn.execute(f"CREATE TABLE {schema}.t{i:04d} ({COLUMNS})")
        services.publish_schema(conn, schema)
    env = services.schema_source_env(schema)
    try:
        with tempfile.TemporaryDirectory() as work:
            config = load_config(environ=env, cwd=Path(work))
            for label in ("first run (create)", "second run (no-op)"):
                start = time.monotonic()
                result = bootstrap(config)
                total = time.monotonic() - start
                actions = sorted({p.action for p in result.plans})
                phases = ", ".join(f"{k} {v:.2f}s" for k, v in result.timings.items())
                print(f"{count} tables, {label}: {total:.2f}s  [{'/'.join(actions)}]  {phases}")
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


if __name__ == "__main__":
    with services.forgetting_made():
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
