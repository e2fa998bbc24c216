"""Waiting for a stack part to start: patience follows its log, not a fixed clock."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdcmirror.stack import processes

# a child that writes a log line every 0.1 s for ``lines`` lines, then creates ``ready``
# (when given) and sleeps
CHILD = """
import sys, time, pathlib
log, lines, ready = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for i in range(lines):
    with log.open("a") as f:
        f.write(f"recovering partition {i}\\n")
    time.sleep(0.1)
if ready:
    pathlib.Path(ready).touch()
time.sleep(float(sys.argv[4]))
"""


def _start(tmp_path: Path, lines: int, ready: bool, then_sleep: float) -> tuple[int, Path, Path]:
    log, flag = tmp_path / "part.log", tmp_path / "ready"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(log),
            str(lines),
            str(flag) if ready else "",
            str(then_sleep),
        ]
    )
    STARTED.append(proc)
    return proc.pid, log, flag


STARTED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _no_orphans() -> Iterator[None]:
    yield
    while STARTED:
        proc = STARTED.pop()
        proc.kill()
        proc.wait()


def test_a_part_that_keeps_logging_is_waited_for_past_the_quiet_time(tmp_path: Path) -> None:
    pid, log, flag = _start(tmp_path, lines=20, ready=True, then_sleep=30)
    began = time.monotonic()
    outcome = processes.wait_ready(pid, log, flag.exists, quiet=0.6, cap=30)
    assert outcome == "ready"
    assert time.monotonic() - began > 1.5  # 20 lines at 0.1 s: far past the quiet time


def test_a_part_whose_log_stops_moving_is_given_up_on(tmp_path: Path) -> None:
    pid, log, flag = _start(tmp_path, lines=3, ready=False, then_sleep=30)
    began = time.monotonic()
    assert processes.wait_ready(pid, log, flag.exists, quiet=0.8, cap=30) == "quiet"
    assert time.monotonic() - began < 10


def test_a_part_that_logs_forever_stops_at_the_cap(tmp_path: Path) -> None:
    pid, log, flag = _start(tmp_path, lines=1000, ready=False, then_sleep=30)
    assert processes.wait_ready(pid, log, flag.exists, quiet=0.8, cap=1.5) == "cap"


def test_a_part_that_exits_is_reported(tmp_path: Path) -> None:
    pid, log, flag = _start(tmp_path, lines=2, ready=False, then_sleep=0)
    assert processes.wait_ready(pid, log, flag.exists, quiet=20, cap=30) == "exited"
