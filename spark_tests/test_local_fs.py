"""Hadoop's local file system without a process per file (``cdcmirror/jvm/local_fs.py``):
a local Spark session as cdcmirror builds it writes, MERGEs and renames the same files as
with Hadoop's own classes, without starting ``chmod`` or ``readlink`` (a PATH whose
commands log themselves sees every process the JVM starts)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from cdcmirror.jvm.local_fs import CONTEXT_IMPL, FILE_IMPL, build_jar

COMMANDS = ("chmod", "readlink", "ls", "stat")  # what Hadoop runs for local files
SAME = ("rows", "files", "modes", "renamed", "link", "plain")


def _logging_bin(tmp_path: Path, log: Path) -> Path:
    """A directory of scripts named as COMMANDS that log their call and run the real one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in COMMANDS:
        real = shutil.which(name)
        assert real, f"{name} is not on PATH"
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\nexec {real} "$@"\n')
        script.chmod(0o755)
    return bin_dir


def _probe(tmp_path: Path, mode: str, bin_dir: Path, log: Path) -> tuple[dict[str, Any], list[str]]:
    """``local_fs_probe`` in a process whose PATH starts with ``bin_dir``; its JSON and the
    commands it started."""
    work = tmp_path / mode
    work.mkdir()
    log.write_text("")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "support.local_fs_probe", str(work), mode],
        cwd=Path(__file__).parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:]
    return json.loads(lines[-1]), log.read_text().splitlines()


def test_local_files_are_made_without_a_process_each(tmp_path: Path) -> None:
    assert build_jar() is not None, "`cdcmirror jars resolve` builds it; it needs a JDK's javac"
    log = tmp_path / "commands.log"
    bin_dir = _logging_bin(tmp_path, log)
    own, own_commands = _probe(tmp_path, "own", bin_dir, log)
    hadoop, hadoop_commands = _probe(tmp_path, "hadoop", bin_dir, log)
    assert (own["file_impl"], own["context_impl"]) == (FILE_IMPL, CONTEXT_IMPL)
    assert hadoop["file_impl"] == "org.apache.hadoop.fs.LocalFileSystem"
    # Hadoop's own classes start a process per file created and per rename
    for command in ("chmod", "readlink"):
        assert any(c.startswith(command) and str(tmp_path) in c for c in hadoop_commands)
    # Spark marks the jars it copies at start-up executable with chmod either way, and a
    # symbolic link is left to Hadoop (readlink): nothing else
    link = f"readlink file:{tmp_path / 'own' / 'ck' / 'link'}"
    assert [c for c in own_commands if str(tmp_path) in c] == [link], own_commands
    assert own["rows"] == [150, 100]  # 100 rows, 50 updated, 50 inserted
    assert {k: own[k] for k in SAME} == {k: hadoop[k] for k in SAME}
