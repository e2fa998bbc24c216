"""`cdcmirror stack`, jar resolution and service checks against the real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cdcmirror.exceptions import ArtifactResolutionError
from cdcmirror.jvm.manifest import ArtifactGroup, Coordinate
from cdcmirror.jvm.resolve import resolve_group
from cdcmirror.stack import processes
from cdcmirror.stack.control import Stack
from cdcmirror.stack.layout import KAFKA, REGISTRY, REGISTRY_CCOMPAT_PATH
from support import services
from support.services import CDC_PASSWORD

pytestmark = pytest.mark.serial  # see the marker in pyproject.toml


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cdcmirror.cli", *args],
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, **(env or {})},
    )


def test_up_is_idempotent(stack: Stack) -> None:
    before = {s.name: s.pid for s in stack.status()}
    after = {s.name: (s.pid, s.state) for s in stack.up()}
    assert after == {name: (pid, "healthy") for name, pid in before.items()}


def test_every_part_listens_on_loopback_only(stack: Stack) -> None:
    """What the quick start says: nothing the stack starts answers on another interface."""
    from cdcmirror.stack import layout

    for part in layout.PARTS:
        for port in part.ports:
            found = services.listening_addresses(port)
            assert found and found <= services.LOOPBACK, (part.name, port, found)


def kill_9(pid: int | None) -> int:
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        if not processes.alive(pid):
            break
        time.sleep(0.1)
    return pid


def test_up_recovers_after_kill_9_of_the_broker(stack: Stack) -> None:
    old = kill_9(stack.pid(KAFKA))
    assert stack.pid(KAFKA) is None
    assert {s.name: s.state for s in stack.status()}["kafka"] == "stopped"

    statuses = {s.name: s for s in stack.up()}
    assert statuses["kafka"].state == "healthy" and statuses["kafka"].pid not in (None, old)
    assert statuses["connect"].state == "healthy"


def test_registry_keeps_its_schemas_across_a_kill_9(stack: Stack) -> None:
    """Events in Kafka name schema ids: the registry must still serve them after a restart."""
    import json
    import urllib.request

    base = REGISTRY.address() + REGISTRY_CCOMPAT_PATH
    subject = f"cdcmirror-test-{time.time_ns()}-value"
    schema = {"type": "record", "name": "T", "fields": [{"name": "n", "type": "long"}]}
    request = urllib.request.Request(
        f"{base}/subjects/{subject}/versions",
        data=json.dumps({"schema": json.dumps(schema)}).encode(),
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        sid = json.loads(resp.read())["id"]
    old = kill_9(stack.pid(REGISTRY))
    assert {s.name: s.state for s in stack.status()}["registry"] == "stopped"
    statuses = {s.name: s for s in stack.up()}
    assert statuses["registry"].state == "healthy" and statuses["registry"].pid != old
    with urllib.request.urlopen(f"{base}/schemas/ids/{sid}", timeout=10) as resp:
        assert json.loads(json.loads(resp.read())["schema"]) == schema


def test_port_taken_by_a_foreign_process_is_exit_2(stack: Stack, tmp_path: Path) -> None:
    """A second stack directory sees the running broker's port as someone else's."""
    result = cli("stack", "up", env={"CDCMIRROR_STACK_DIR": str(tmp_path / "other")})
    assert result.returncode == 2, result.stderr
    assert "port 9092" in result.stderr and "did not start" in result.stderr


def test_unresolvable_coordinate_names_it(tmp_path: Path) -> None:
    group = ArtifactGroup(
        name="bogus",
        path="bogus",
        artifacts=(Coordinate.parse("org.cdcmirror.nonexistent:no-such-artifact:0.0.1"),),
        exclude=(),
    )
    with pytest.raises(ArtifactResolutionError) as info:
        resolve_group(group, root=tmp_path)
    assert "org.cdcmirror.nonexistent:no-such-artifact" in str(info.value)
    assert info.value.exit_code == 2
    assert not (tmp_path / "bogus").exists()


def test_check_names_unreachable_kafka_with_exit_2(stack: Stack) -> None:
    # A source name of its own: the stack is one per machine user, so the demo's connector
    # may be left registered by another checkout (and FAILED, its secrets file gone with it).
    # The source's password as every test gives it (run alone, nothing else had set it)
    own = {"CDCMIRROR_SOURCE__NAME": "checkprobe", "CDCMIRROR_SOURCE__PASSWORD": CDC_PASSWORD}
    ok = cli("check", env=own)
    assert ok.returncode == 0, ok.stderr
    assert "3 Debezium connectors" in ok.stdout
    assert "cdcmirror-checkprobe is not registered yet" in ok.stdout
    bad = cli("check", env={**own, "CDCMIRROR_KAFKA__BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    assert bad.returncode == 2
    assert "Kafka at 127.0.0.1:1 does not answer" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_up_status_down_twice_in_a_row(stack: Stack) -> None:
    """Runs last in this file: it takes the stack down and leaves it up again."""
    try:
        for _ in range(2):
            up = cli("stack", "up")
            assert up.returncode == 0, up.stderr
            status = cli("--output", "json", "stack", "status")
            assert status.returncode == 0, status.stdout
            down = cli("stack", "down")
            assert down.returncode == 0, down.stderr
            stopped = cli("stack", "status")
            assert stopped.returncode == 1 and "stopped" in stopped.stdout
            assert not processes.port_open(9092) and not processes.port_open(8083)
    finally:
        final = cli("stack", "up")
        assert final.returncode == 0, final.stderr
