#!/usr/bin/env bash
# The compatibility run (`make test-compat`, outside CI): the local Spark tests and the
# integration subset below, on each other Spark line of cdcmirror/jvm/manifest.toml, each
# in a virtualenv of its own (.venv-spark-LINE) with that line's pyspark; the installed
# pyspark picks the line's jars. Needs the stack running (`make stack-up`).
# Usage: scripts/test-compat.sh [LINE ...]   (default: every other line)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WORKERS=${WORKERS:-2}
SUBSET=(
    spark_tests
    integration_tests/test_mirror_postgresql.py
    integration_tests/test_mirror_mariadb.py
    integration_tests/test_initial_load.py
    integration_tests/test_streams.py
    integration_tests/test_carrier_changes.py
    integration_tests/test_reconcile_postgresql.py
    integration_tests/test_maintain.py
)

manifest() {  # manifest LINE KEY: a version of that Spark line
    .venv/bin/python -c 'import sys; from cdcmirror.jvm.manifest import load_manifest
m = load_manifest(sys.argv[1]); print(" ".join(m.lines[1:]) if sys.argv[2] == "lines" else m.versions[sys.argv[2]])' "$@"
}

lines=("$@")
[ ${#lines[@]} -gt 0 ] || read -r -a lines <<< "$(manifest "" lines)"
failed=()
for line in "${lines[@]}"; do
    spark=$(manifest "$line" spark)
    venv=.venv-spark-$line
    echo "== Spark $line (pyspark $spark) in $venv"
    if [ ! -x "$venv/bin/python" ]; then
        "$PYTHON" -m venv "$venv"
        "$venv/bin/pip" install -q --upgrade pip
    fi
    # cdcmirror's dependencies but its pyspark pin, then the line's pyspark
    "$PYTHON" - > "$venv/requirements.txt" <<'PY'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
deps = [d for d in project["dependencies"] if not d.startswith("pyspark")]
print("\n".join(deps + project["optional-dependencies"]["dev"]))
PY
    "$venv/bin/pip" install -q -r "$venv/requirements.txt" "pyspark==$spark"
    "$venv/bin/pip" install -q --no-deps -e .
    "$venv/bin/cdcmirror" jars resolve spark
    if JAVA_TOOL_OPTIONS="-XX:TieredStopAtLevel=1" "$venv/bin/pytest" -q -n "$WORKERS" \
        --dist loadfile -m "not full and not serial" "${SUBSET[@]}"; then
        echo "== Spark $line: passed"
    else
        failed+=("$line")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "failed on Spark ${failed[*]}" >&2
    exit 1
fi
