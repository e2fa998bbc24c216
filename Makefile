# cdcmirror: `make help` lists the targets.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
CLI    := $(BIN)/cdcmirror

.PHONY: help install system-deps provision jars stack-up stack-down lint docs docs-build docs-check unit spark integration test test-full test-compat quickstart bench bench-peers chaos fuzz clean

help: ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(BIN)/activate: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev,docs]"
	touch $(BIN)/activate

install: $(BIN)/activate ## Python virtualenv with cdcmirror and the dev tools

system-deps: ## JDK, Maven, docker-compose client from Debian (when missing)
	bash scripts/install-system-deps.sh

provision: ## PostgreSQL (logical replication) + MariaDB (row binlog), started
	bash scripts/provision-sources.sh

jars: install system-deps ## resolve the pinned JVM jars into ~/.cache/cdcmirror/jars, build the local file system for Spark (needs javac)
	$(CLI) jars resolve

stack-up: jars ## Kafka (KRaft) + Kafka Connect with Debezium on 127.0.0.1
	$(CLI) stack up

stack-down: ## stop the local stack
	$(CLI) stack down

lint: install ## ruff (lint + format) and mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

docs: install ## write the reference pages generated from the code (docs/reference/), then build the site into site/
	$(BIN)/python -m cdcmirror.cli.reference docs/reference
	$(MAKE) docs-build

docs-check: docs-build ## open the built site in headless Chromium (Debian's, installed when missing): screenshots of three pages into site-shots/, fails on a page that does not render
	command -v chromium >/dev/null || $$( [ $$(id -u) = 0 ] || echo sudo ) apt-get install -y -q chromium
	$(BIN)/python scripts/docs_check.py

docs/javascripts/mermaid.min.js:
	$(BIN)/python scripts/vendor_mermaid.py $@

docs-build: install docs/javascripts/mermaid.min.js ## build the docs site into site/ with --strict: a broken link or anchor, or a page left out of the navigation, fails
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

unit: install ## unit tests (no JVM, no service)
	$(BIN)/pytest -q cdcmirror tests

spark: install ## the local Spark tests (the mirror's SQL, decode and apply; no service)
	$(BIN)/pytest -q spark_tests

integration: install ## integration tests against the real services
	$(BIN)/pytest -q integration_tests

# Tests run in two passes: most of them on WORKERS pytest-xdist workers (each file's tests on
# one worker, in order, as they run alone: module fixtures and the order within a file hold),
# then alone those marked serial (they stop, kill or reconfigure a service the others share).
# Both passes run; the target fails if either did.
# The parallel part's JVMs (Spark drivers, mirror jobs, spark-submit) compile with C1 only:
# they are short and many, and on two shared cores C2's compiler costs more CPU than its code
# saves (test_golden_apply alone: 245 CPU-seconds against 326 at the same wall time; the 1M-row
# test is slower, 324 s against 286 with SerialGC too). Not the serial part: it restarts the
# stack's services, whose own flags (G1) must stay theirs. The mirror's defaults are unchanged.
WORKERS ?= 2
TEST_JVM ?= -XX:TieredStopAtLevel=1
PARALLEL = JAVA_TOOL_OPTIONS="$(TEST_JVM)" $(BIN)/pytest -n $(WORKERS) --dist loadfile --durations=60
SERIAL = $(BIN)/pytest --durations=20

test: system-deps install provision stack-up lint docs-build ## install, provision, start, lint, all tests but the long ones (CI)
	$(PARALLEL) -m "not full and not serial" cdcmirror tests spark_tests integration_tests; a=$$?; \
	$(SERIAL) -m "not full and serial" integration_tests; b=$$?; test $$a = 0 && test $$b = 0

test-full: system-deps install provision stack-up lint docs-build ## every test, the long ones (marked full) too
	$(PARALLEL) -m "not serial" cdcmirror tests spark_tests integration_tests; a=$$?; \
	$(SERIAL) -m serial integration_tests; b=$$?; test $$a = 0 && test $$b = 0

test-compat: system-deps install provision stack-up ## the local Spark tests and an integration subset on the other Spark line (4.0), in a virtualenv of its own (outside CI)
	bash scripts/test-compat.sh

quickstart: system-deps install provision stack-up ## the local demo end to end
	$(BIN)/python scripts/quickstart.py

bench: install ## benchmarks (need provision + stack-up): bootstrap of 200 tables, mirror of 100k events (JSON and Avro), the JSON decode from whole values and from payloads, a PostgreSQL event's position, inserts, updates and a mixed batch of 100k beside plain MERGE, append and pyiceberg upsert, the fixed cost of a 100-event batch (updates alone, mixed, beside 100 idle tables, and 100 busy tables beside 100 idle), history tables (a 100-event and a mixed 100k batch, an as-of read of 10M versions), a small MERGE against the table's snapshot count and against piled-up delete files (formats 2 and 3), scan before/after maintain, a classified batch against 1M tombstones kept and pruned, a 10k batch into tables of 100k and 3M rows, freshness under 200 tx/s at triggers of 1, 10 and 60 s and the plain MERGEs' floor under it, an event stream of 1M events (JSON and Avro) and its decode, the initial load and the re-load of 1M rows; figures in benchmarks/RESULTS.md
	$(BIN)/python benchmarks/bootstrap_tables.py 200
	$(BIN)/python benchmarks/mirror_batch.py 100000 json,avro
	$(BIN)/python benchmarks/json_decode.py 200000
	$(BIN)/python benchmarks/position_sql.py 2000000
	$(BIN)/python benchmarks/mixed_batch.py 100000 3
	$(BIN)/python benchmarks/mixed_batch.py 100000 3 --warmup=3
	$(BIN)/python benchmarks/mixed_batch.py 100000 1 --warmup=3 --format=avro
	$(BIN)/python benchmarks/small_batch.py 40 100
	$(BIN)/python benchmarks/small_batch.py 12 100 --idle=100
	$(BIN)/python benchmarks/small_batch.py 6 100 --busy=100 --idle=100
	$(BIN)/python benchmarks/small_batch.py 30 100 --mixed
	$(BIN)/python benchmarks/small_batch.py 30 100 --mixed --history
	$(BIN)/python benchmarks/mixed_batch.py 100000 1 --warmup=2 --history
	$(BIN)/python benchmarks/history_read.py 10000000 10
	$(BIN)/python benchmarks/snapshot_history.py 10,900,3600,7200 5
	$(BIN)/python benchmarks/delete_files.py 65
	$(BIN)/python benchmarks/v3_soak.py 60
	$(BIN)/python benchmarks/maintain_scan.py 200
	$(BIN)/python benchmarks/tombstones.py
	$(BIN)/python benchmarks/table_size.py 100000,3000000 10000
	$(BIN)/python benchmarks/freshness.py 1,10,60 300 200
	$(BIN)/python benchmarks/merge_floor.py 150 40
	$(BIN)/python benchmarks/stream_append.py 1000000 --avro --freshness 1,10,60
	$(BIN)/python benchmarks/stream_decode.py 1000000
	$(BIN)/python benchmarks/initial_load.py 1000000

bench-peers: install ## cdcmirror beside Flink SQL into an Iceberg upsert table on the same Debezium topic (PyFlink and its jars from PyPI and Maven Central, installed on first use into ~/.cache/cdcmirror/peers) and beside plain Spark's least batch job (the floor): time to equality, read cost, replay; 100k and 1M events; needs provision + stack-up
	$(BIN)/python benchmarks/peers/flink_peer.py 20000 80000 --checkpoints=2,10
	$(BIN)/python benchmarks/peers/flink_peer.py 200000 800000 --checkpoints=2,10 --no-replay

chaos: install ## faults at random times (kill -9 of the mirror, Connect, Kafka; source restarts; lost checkpoint; ...) while both sources change; CHAOS_FAULTS=N CHAOS_SEED=S; needs provision + stack-up
	$(BIN)/python scripts/chaos.py

fuzz: install ## the fuzzed-event tests at full size (3,400 bad events each, 13,600 in all; CI runs 1,000 each); needs provision + stack-up
	FUZZ_EVENTS=3400 $(BIN)/pytest -q integration_tests -k fuzzed

clean: ## remove the virtualenv and local state of this checkout
	rm -rf $(VENV) .cdcmirror .pytest_cache .mypy_cache .ruff_cache
