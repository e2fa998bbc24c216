"""Is the source's Debezium connector alive? A FAILED or PAUSED connector or task means no
change reaches Kafka any more, and the mirror would look idle: every command that can see it
says so, naming the connector, its state and the cause from the trace. Pure, but for
``connector_problem`` (one REST call)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cdcmirror.config.masking import mask_url_password
from cdcmirror.config.settings import Connect
from cdcmirror.exceptions import CdcMirrorError

logger = logging.getLogger(__name__)

BAD_STATES = ("FAILED", "PAUSED", "STOPPED", "UNASSIGNED")


def trace_summary(trace: str) -> str:
    """The trace's first line and, when there is one, its deepest cause.

    >>> trace_summary("a.B: boom\\n\\tat x\\nCaused by: c.D: parse failed\\n\\tat y")
    'a.B: boom (cause: c.D: parse failed)'
    """
    lines = [line.strip() for line in trace.splitlines() if line.strip()]
    if not lines:
        return "no trace"
    causes = [line[len("Caused by: ") :] for line in lines if line.startswith("Caused by: ")]
    first = lines[0][:300]
    return f"{first} (cause: {causes[-1][:300]})" if causes else first


def status_problem(name: str, status: dict[str, Any], connect_url: str) -> str | None:
    """What is wrong with a connector, from its ``/status``; None when it and every task run.

    >>> status_problem("c", {"connector": {"state": "RUNNING"},
    ...     "tasks": [{"id": 0, "state": "RUNNING"}]}, "http://h:8083") is None
    True
    >>> status_problem("c", {"connector": {"state": "RUNNING"}, "tasks": [{"id": 0,
    ...     "state": "FAILED", "trace": "x.Y: bad"}]}, "http://h:8083").split(".")[0]
    "connector 'c': task 0 is FAILED: x"
    """
    parts = []
    connector = status.get("connector", {})
    if connector.get("state") in BAD_STATES:
        trace = connector.get("trace")
        parts.append(
            f"the connector is {connector['state']}"
            + (f": {trace_summary(trace)}" if trace else "")
        )
    for task in status.get("tasks", []):
        if task.get("state") in BAD_STATES:
            trace = task.get("trace")
            parts.append(
                f"task {task.get('id')} is {task['state']}"
                + (f": {trace_summary(trace)}" if trace else "")
            )
    if not status.get("tasks") and connector.get("state") == "RUNNING":
        parts.append("it has no task")
    if not parts:
        return None
    return (
        f"connector {name!r}: {'; '.join(parts)}. No change reaches Kafka until it runs again: "
        + remedy(name, status, connect_url)
    )


def remedy(name: str, status: dict[str, Any], connect_url: str) -> str:
    """What brings a connector in ``status`` back, for its states: a FAILED one is restarted
    after its cause is fixed; a PAUSED or STOPPED one was stopped on purpose and is resumed
    (a restart leaves it paused); an UNASSIGNED one waits for a worker.

    >>> remedy("c", {"connector": {"state": "PAUSED"}, "tasks": []}, "http://h")
    "someone paused it: resume it with `curl -X PUT 'http://h/connectors/c/resume'`"
    >>> remedy("c", {"connector": {"state": "RUNNING"}, "tasks": [{"state": "FAILED"}]}, "u")[:14]
    'fix the cause '
    """
    connect_url = mask_url_password(connect_url)
    url = f"{connect_url}/connectors/{name}"
    states = [status.get("connector", {}).get("state")]
    states += [t.get("state") for t in status.get("tasks", [])]
    steps = []
    if "FAILED" in states:
        steps.append(
            "fix the cause (Kafka Connect's log has the whole trace), then `curl -X POST "
            f"'{url}/restart?includeTasks=true&onlyFailed=true'`"
        )
    stopped = [s for s in ("PAUSED", "STOPPED") if s in states]
    if stopped:
        how = "paused" if stopped[0] == "PAUSED" else "stopped"
        steps.append(f"someone {how} it: resume it with `curl -X PUT '{url}/resume'`")
    if "UNASSIGNED" in states:
        steps.append(
            "no Connect worker runs it: check that the workers of the Connect cluster are up "
            f"(`curl '{connect_url}/connectors/{name}/status'` names the worker)"
        )
    if not steps:  # running without a task: the connector found nothing to capture
        steps.append(
            "check its config (`curl '" + url + "/config'`) and Kafka Connect's log, then "
            f"`curl -X POST '{url}/restart?includeTasks=true'`"
        )
    return "; ".join(steps)


def failed(status: dict[str, Any]) -> bool:
    """Is the connector or one of its tasks FAILED (what a restart can cure; PAUSED and
    STOPPED are someone's decision and stay)?

    >>> failed({"connector": {"state": "RUNNING"}, "tasks": [{"id": 0, "state": "FAILED"}]})
    True
    >>> failed({"connector": {"state": "PAUSED"}, "tasks": [{"id": 0, "state": "PAUSED"}]})
    False
    """
    states = [status.get("connector", {}).get("state")]
    states += [t.get("state") for t in status.get("tasks", [])]
    return "FAILED" in states


@dataclass
class RestartBackoff:
    """When the mirror may restart a FAILED connector again: at once the first time, then
    after ``first`` seconds, doubling up to ``cap``, so a cause that persists (a bad config,
    a source that is gone) costs one restart every ``cap`` seconds, not a restart loop; a
    check that finds everything running starts over.

    >>> b = RestartBackoff(first=30, cap=100)
    >>> b.due(0), b.restarted(0), b.due(29), b.due(30), b.restarted(30), b.restarted(90)
    (True, 30.0, False, True, 60.0, 100.0)
    >>> b.running(); b.due(91)
    True
    """

    first: float = 30.0
    cap: float = 600.0
    attempts: int = 0
    next_at: float = 0.0

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def restarted(self, now: float) -> float:
        """Records a restart at ``now``; returns the wait before the next one may follow."""
        wait = float(min(self.cap, self.first * 2**self.attempts))
        self.attempts += 1
        self.next_at = now + wait
        return wait

    def running(self) -> None:
        self.attempts, self.next_at = 0, 0.0


def connector_problem(connect: Connect, name: str) -> str | None:
    """``status_problem`` of the live connector. None too when it is not registered (e.g.
    bootstrap ``--no-connector``) or Connect cannot be reached (logged: ``check`` is the
    command that fails on that)."""
    from cdcmirror.clients.connect import ConnectClient

    client = ConnectClient.of(connect, timeout=10.0)
    try:
        if name not in client.names():
            return None
        return status_problem(name, client.status(name), connect.url)
    except CdcMirrorError as exc:
        logger.warning("connector %s: its state cannot be read: %s", name, exc)
        return None
