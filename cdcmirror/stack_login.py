"""The local stack's own secrets: the login of Kafka Connect's REST API, made once per stack
(a random password, kept owner-only in the stack's directory), and the directory of the
secret files its connectors read through Connect's file provider (the only one it may read).

A fixed, published default would let anyone on the machine log in to Connect, and Connect
can read every file and variable its process can unless told otherwise."""

from __future__ import annotations

import secrets
from pathlib import Path

from cdcmirror import paths

USER = "cdcmirror"


def login_file(root: Path | None = None) -> Path:
    """Where the stack keeps its REST password (outside the secrets directory: a connector's
    file reference must never reach it)."""
    return (root or paths.stack_dir()) / "config" / "connect-login"


def secrets_dir(root: Path | None = None) -> Path:
    """The directory of the connectors' secret files: the one Connect's file provider reads."""
    return (root or paths.stack_dir()) / "secrets"


def stack_password(root: Path | None = None) -> str | None:
    """The REST password of the local stack; None when no stack was set up here."""
    try:
        return login_file(root).read_text("utf-8").strip() or None
    except OSError:
        return None


def ensure_login(root: Path | None = None) -> tuple[str, str]:
    """The stack's REST login, its password made on the first call (32 random bytes)."""
    password = stack_password(root)
    if password is None:
        password = secrets.token_urlsafe(32)
        paths.write_private(login_file(root), password + "\n")
    return USER, password
