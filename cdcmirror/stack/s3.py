"""The cluster profile's S3 store: the Versity S3 Gateway on its posix backend, on loopback.

Built from the Go module proxy with ``go install`` into cdcmirror's cache (the version is
pinned here, as the jars are in the manifest) and checked with ``go version -m``. Every
top-level directory of its data directory is a bucket; ``warehouse`` exists from the start.
The credentials are the local stack's own, like the sources' development passwords.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from cdcmirror import paths
from cdcmirror.exceptions import StackError
from cdcmirror.stack.layout import HOST, StackPart

MODULE = "github.com/versity/versitygw"
VERSION = "v1.8.0"
S3_PORT = 7070
S3_URL = f"http://{HOST}:{S3_PORT}"
REGION = "us-east-1"
ACCESS_KEY = "cdcmirror"
SECRET_KEY = "cdcmirror-local-only"  # the local stack's, never a real account's
BUCKET = "warehouse"
S3 = StackPart("s3", "", (S3_PORT,), "")


def binary() -> Path:
    return paths.cache_dir() / "bin" / "versitygw"


def go_tool() -> str | None:
    """``go`` on PATH, else where the official Go archive installs it."""
    found = shutil.which("go")
    if found is None and Path("/usr/local/go/bin/go").exists():
        found = "/usr/local/go/bin/go"
    return found


def installed_version(path: Path) -> str | None:
    """The module version ``go version -m`` reads from the binary, None without one."""
    go = go_tool()
    if go is None or not path.exists():
        return None
    out = subprocess.run([go, "version", "-m", str(path)], capture_output=True, text=True)
    return module_version(out.stdout)


def module_version(build_info: str) -> str | None:
    """
    >>> module_version("x: go1.26\\n\\tpath\\tgithub.com/versity/versitygw/cmd/versitygw\\n"
    ...                "\\tmod\\tgithub.com/versity/versitygw\\tv1.8.0\\th1:abc=\\n")
    'v1.8.0'
    """
    for line in build_info.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "mod" and parts[1] == MODULE:
            return parts[2]
    return None


def ensure_installed(say: Callable[[str], None]) -> Path:
    """The pinned gateway binary, built with ``go install`` when it is missing or another
    version."""
    path = binary()
    if installed_version(path) == VERSION:
        return path
    go = go_tool()
    if go is None:
        raise StackError(
            "the cluster profile's S3 store is built with Go: install Go 1.24 or newer "
            "(https://go.dev/dl, or Debian's golang-go) and run `cdcmirror stack up --cluster` "
            "again"
        )
    say(f"s3: building the Versity S3 Gateway {VERSION} with go install (a few minutes once)")
    env = {**os.environ, "GOBIN": str(path.parent)}
    target = f"{MODULE}/cmd/versitygw@{VERSION}"
    proc = subprocess.run([go, "install", target], capture_output=True, text=True, env=env)
    if proc.returncode != 0 or installed_version(path) != VERSION:
        raise StackError(
            f"`go install {target}` failed; check that the Go module proxy is reachable:\n"
            f"{(proc.stdout + proc.stderr)[-2000:]}"
        )
    return path


def command(path: Path, data_dir: Path) -> list[str]:
    """The command line; the data directory on it marks the process as ours."""
    return [str(path), "--port", f"{HOST}:{S3_PORT}", "--region", REGION, "posix", str(data_dir)]


def env() -> dict[str, str]:
    return {**os.environ, "ROOT_ACCESS_KEY_ID": ACCESS_KEY, "ROOT_SECRET_ACCESS_KEY": SECRET_KEY}


def answers(timeout: float = 3.0) -> bool:
    """The gateway answers S3 requests (an unsigned one is refused with an S3 error)."""
    try:
        with urllib.request.urlopen(f"{S3_URL}/{BUCKET}", timeout=timeout):
            return True
    except urllib.error.HTTPError as exc:
        return exc.code in (400, 403)
    except OSError:
        return False


def catalog_properties() -> dict[str, str]:
    """The ``[iceberg.catalog]`` keys for tables on this store (pyiceberg and Iceberg's
    S3FileIO read the same names)."""
    return {
        "s3.endpoint": S3_URL,
        "s3.access-key-id": ACCESS_KEY,
        "s3.secret-access-key": SECRET_KEY,
        "s3.path-style-access": "true",
        "s3.region": REGION,
        "client.region": REGION,
    }
