"""The remedy a connector's problem names follows its state (issue 67, item 13): a PAUSED or
STOPPED connector is resumed, a FAILED one restarted after its cause is fixed."""

from __future__ import annotations

from typing import Any

import pytest

from cdcmirror.health.connector import status_problem

URL = "http://127.0.0.1:8083"


def _status(connector: str, *tasks: str) -> dict[str, Any]:
    return {
        "connector": {"state": connector},
        "tasks": [{"id": i, "state": s} for i, s in enumerate(tasks)],
    }


@pytest.mark.parametrize(
    ("status", "wanted", "unwanted"),
    [
        pytest.param(
            _status("PAUSED", "PAUSED"),
            "curl -X PUT 'http://127.0.0.1:8083/connectors/c/resume'",
            "restart",
            id="paused-is-resumed",
        ),
        pytest.param(
            _status("STOPPED"),
            "curl -X PUT 'http://127.0.0.1:8083/connectors/c/resume'",
            "restart",
            id="stopped-is-resumed",
        ),
        pytest.param(
            _status("RUNNING", "FAILED"),
            "curl -X POST 'http://127.0.0.1:8083/connectors/c/restart?includeTasks=true"
            "&onlyFailed=true'",
            "resume",
            id="failed-is-restarted",
        ),
        pytest.param(
            _status("UNASSIGNED", "UNASSIGNED"),
            "no Connect worker runs it",
            "resume",
            id="unassigned-waits-for-a-worker",
        ),
    ],
)
def test_the_remedy_fits_the_state(status: dict[str, Any], wanted: str, unwanted: str) -> None:
    problem = status_problem("c", status, URL)
    assert problem is not None
    assert wanted in problem, problem
    assert unwanted not in problem, problem


def test_a_paused_task_of_a_failed_connector_gets_both_remedies() -> None:
    problem = status_problem("c", _status("FAILED", "PAUSED"), URL)
    assert problem is not None
    assert "/restart?includeTasks=true" in problem and "/resume" in problem, problem
