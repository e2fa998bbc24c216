"""Start, find and stop the stack's JVM processes through pid files."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        return sock.connect_ex((host, port)) == 0


def wait_port_closed(port: int, timeout: float) -> bool:
    """Wait until nothing listens on the port; True when it closed within the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not port_open(port):
            return True
        time.sleep(0.2)
    return False


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline")
            .read_bytes()
            .replace(b"\0", b" ")
            .decode("utf-8", "replace")
        )
    except OSError:
        return ""


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def running_pid(pid_file: Path, marker: str) -> int | None:
    """The pid in the file when that process is alive and carries ``marker`` on its command line.

    A pid that was reused by an unrelated process does not count.
    """
    pid = read_pid(pid_file)
    if pid is None or _is_zombie(pid):
        return None
    return pid if marker in _cmdline(pid) else None


def start(cmd: list[str], pid_file: Path, log_file: Path, env: dict[str, str] | None = None) -> int:
    """Start ``cmd`` detached in its own session, output appended to ``log_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as log:
        log.write(f"\n--- cdcmirror stack start {time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            close_fds=True,
        )
    pid_file.write_text(f"{proc.pid}\n")
    return proc.pid


def stop(pid: int, timeout: float = 30.0) -> bool:
    """SIGTERM, wait, then SIGKILL. True when it had to be killed."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _is_zombie(pid):
            _reap(pid)
            return False
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    for _ in range(50):
        if _is_zombie(pid):
            break
        time.sleep(0.1)
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def alive(pid: int) -> bool:
    return not _is_zombie(pid)


def wait_ready(
    pid: int, log_file: Path, ready: Callable[[], bool], quiet: float, cap: float
) -> str:
    """Wait until ``ready()``; "ready", "exited", "quiet" (no new log output for ``quiet``
    seconds) or "cap" (still writing its log after ``cap`` seconds).

    A broker killed with hundreds of partitions recovers each one before it listens, which
    can take minutes on a slow disk; it writes a log line per partition meanwhile. So the
    patience runs out when the log stops moving, not at a fixed time.
    """
    start = time.monotonic()
    last_size, last_change = _size(log_file), start
    while True:
        if not alive(pid):
            return "exited"
        if ready():
            return "ready"
        now = time.monotonic()
        size = _size(log_file)
        if size != last_size:
            last_size, last_change = size, now
        if now - last_change > quiet:
            return "quiet"
        if now - start > cap:
            return "cap"
        time.sleep(min(1.0, quiet / 10))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def tail(path: Path, lines: int = 20) -> str:
    """The last lines of a log file, or a note that there is none."""
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])
