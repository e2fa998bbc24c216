"""Where cdcmirror keeps things outside the repository: the jar cache and the local stack."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Root of the download cache (jars): ``$CDCMIRROR_CACHE_DIR`` or ``~/.cache/cdcmirror``."""
    env = os.environ.get("CDCMIRROR_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "cdcmirror"


def jars_dir() -> Path:
    """Directory holding one sub-directory of jars per manifest group."""
    return cache_dir() / "jars"


def jvm_dir() -> Path:
    """The Spark driver JVM's class-data archives (``jvm/class_archive.py``)."""
    return cache_dir() / "jvm"


def stack_dir() -> Path:
    """State, data and logs of the local stack: ``$CDCMIRROR_STACK_DIR`` or the XDG state dir.

    The stack binds fixed loopback ports, so it is one per machine user, not per checkout.
    """
    env = os.environ.get("CDCMIRROR_STACK_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "state") / "cdcmirror" / "stack"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner reads (made so, never readable by others in
    between); a file that already holds ``text`` is left as it is (no churn on re-runs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not (path.is_file() and path.read_text("utf-8") == text):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    path.chmod(0o600)
