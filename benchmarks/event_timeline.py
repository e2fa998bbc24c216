"""Where a batch's time goes, from a Spark event log (``MIXED_BATCH_EVENT_LOG=DIR`` of
``mixed_batch.py``, ``SMALL_BATCH_EVENT_LOG=1`` of ``small_batch.py``): each query whose
description holds TEXT (the job names its batches' queries ``cdcmirror batch N: <table>``),
with its jobs and their stages, in milliseconds from the query's start.

    .venv/bin/python benchmarks/event_timeline.py EVENT_LOG_FILE "cdcmirror batch 4:"
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def event_log_conf(where: Path) -> dict[str, str]:
    """The Spark settings of a job that writes its event log, uncompressed, into ``where``."""
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.compress": "false",
        "spark.eventLog.dir": str(where),
    }


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def timeline(events: list[dict[str, Any]], text: str) -> list[str]:
    """The lines printed for the queries whose description holds ``text``.

    >>> sql = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecution"
    >>> stage = {"Stage ID": 3, "Submission Time": 110, "Completion Time": 150,
    ...     "Number of Tasks": 2}
    >>> print("\\n".join(timeline([
    ...     {"Event": sql + "Start", "executionId": 7, "time": 100, "description": "batch 1: t"},
    ...     {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": 105,
    ...         "Properties": {"spark.sql.execution.id": "7"}, "Stage Infos": [stage]},
    ...     {"Event": "SparkListenerStageCompleted", "Stage Info": stage},
    ...     {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 160},
    ...     {"Event": sql + "End", "executionId": 7, "time": 170},
    ...     {"Event": sql + "Start", "executionId": 8, "time": 180, "description": "other"},
    ... ], "batch 1:")))
    query 7: 70 ms
      job 1: at +5 ms, 55 ms
        stage 3: at +10 ms, 40 ms, 2 tasks
    """
    queries: dict[int, dict[str, Any]] = {}
    jobs: dict[int, dict[str, Any]] = {}
    stages: dict[int, dict[str, Any]] = {}
    for e in events:
        kind = e["Event"].rsplit(".", 1)[-1]
        if kind == "SparkListenerSQLExecutionStart" and text in e.get("description", ""):
            queries[e["executionId"]] = {"start": e["time"], "end": e["time"]}
        elif kind == "SparkListenerSQLExecutionEnd" and e["executionId"] in queries:
            queries[e["executionId"]]["end"] = e["time"]
        elif kind == "SparkListenerJobStart":
            query = e.get("Properties", {}).get("spark.sql.execution.id")
            stage_ids = [s["Stage ID"] for s in e["Stage Infos"]]
            jobs[e["Job ID"]] = {"query": query, "start": e["Submission Time"], "stages": stage_ids}
        elif kind == "SparkListenerJobEnd":
            jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            if info.get("Submission Time"):
                stages[info["Stage ID"]] = info
    lines = []
    for qid, q in sorted(queries.items()):
        lines.append(f"query {qid}: {q['end'] - q['start']} ms")
        for jid, job in sorted(jobs.items()):
            if job["query"] is None or int(job["query"]) != qid:
                continue
            took = job.get("end", job["start"]) - job["start"]
            lines.append(f"  job {jid}: at +{job['start'] - q['start']} ms, {took} ms")
            for sid in job["stages"]:
                if sid in stages:
                    s = stages[sid]
                    at, took = (
                        s["Submission Time"] - q["start"],
                        s["Completion Time"] - s["Submission Time"],
                    )
                    lines.append(
                        f"    stage {sid}: at +{at} ms, {took} ms, {s['Number of Tasks']} tasks"
                    )
    return lines


if __name__ == "__main__":
    print("\n".join(timeline(_events(Path(sys.argv[1])), sys.argv[2])))
