"""Resolve the manifest's artefact groups from Maven Central into the jar cache, with Maven."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

from cdcmirror import paths
from cdcmirror.exceptions import ArtifactResolutionError
from cdcmirror.jvm.manifest import (
    ArtifactGroup,
    Manifest,
    build_pom,
    build_settings,
    load_manifest,
    unresolved_coordinate,
)

logger = logging.getLogger(__name__)

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MARKER = ".resolved"


def group_dir(group: ArtifactGroup, root: Path | None = None) -> Path:
    """The cache directory of one group."""
    return (root or paths.jars_dir()) / group.path


def is_resolved(group: ArtifactGroup, root: Path | None = None) -> bool:
    """True when the group's jars are in the cache for exactly this manifest entry."""
    marker = group_dir(group, root) / MARKER
    return marker.is_file() and marker.read_text().strip() == group.fingerprint()


def group_jars(group: ArtifactGroup, root: Path | None = None) -> list[Path]:
    """The cached jars of a group; raises when the group has not been resolved."""
    if not is_resolved(group, root):
        raise ArtifactResolutionError(
            f"the jars of {group.name!r} are not in the cache {group_dir(group, root)}; "
            "run `cdcmirror jars resolve` first"
        )
    return sorted(group_dir(group, root).glob("*.jar"))


def resolve_group(
    group: ArtifactGroup,
    root: Path | None = None,
    repository_url: str | None = None,
) -> Path:
    """Download one group (and its runtime dependencies) unless it is already cached."""
    target = group_dir(group, root)
    if is_resolved(group, root):
        logger.debug("jars for %s already cached in %s", group.name, target)
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ArtifactResolutionError(
            "Maven (`mvn`) is needed to resolve the JVM jars; install it "
            "(Debian: apt-get install maven) and run `cdcmirror jars resolve` again"
        )
    repo = repository_url or os.environ.get("CDCMIRROR_MAVEN_REPOSITORY", MAVEN_CENTRAL)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"cdcmirror-{group.name}-") as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(build_pom(group))
        (work / "settings.xml").write_text(build_settings(repo))
        out = work / "jars"
        cmd = [
            mvn,
            "-B",
            "-q",
            "-s",
            str(work / "settings.xml"),
            "-f",
            str(work / "pom.xml"),
            f"{DEPENDENCY_PLUGIN}:copy-dependencies",
            f"-DoutputDirectory={out}",
            "-DincludeScope=runtime",
        ]
        if group.exclude:
            cmd.append("-DexcludeArtifactIds=" + ",".join(group.exclude))
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            output = proc.stdout + proc.stderr
            missing = unresolved_coordinate(output)
            what = f"coordinate {missing}" if missing else "a coordinate"
            tail = "\n".join([line for line in output.splitlines() if "ERROR" in line][:5])
            raise ArtifactResolutionError(
                f"could not resolve {what} of jar group {group.name!r} from {repo}; "
                "check the version in cdcmirror/jvm/manifest.toml and that the repository "
                f"is reachable.\n{tail}"
            )
        if group.unpack:
            unpack_archives(out)
        if group.services:
            write_service_jar(out / SERVICE_JAR, group.services)
        (out / MARKER).write_text(group.fingerprint() + "\n")
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(out), target)
    return target


SERVICE_JAR = "cdcmirror-service-entries.jar"


def unpack_archives(directory: Path) -> None:
    """Extract each tar.gz / zip in ``directory`` into it, then remove the archive."""
    for archive in sorted(directory.iterdir()):
        if archive.name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(archive) as tar:
                tar.extractall(directory, filter="data")
        elif archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(directory)
        else:
            continue
        archive.unlink()


def write_service_jar(path: Path, entries: tuple[str, ...]) -> None:
    """A jar of ``META-INF/services`` files, one per interface of ``interface=impl`` entries."""
    by_interface: dict[str, list[str]] = {}
    for entry in entries:
        interface, _, implementation = entry.partition("=")
        by_interface.setdefault(interface.strip(), []).append(implementation.strip())
    with zipfile.ZipFile(path, "w") as jar:
        for interface, impls in sorted(by_interface.items()):
            jar.writestr(f"META-INF/services/{interface}", "".join(i + "\n" for i in impls))


def resolve_all(
    manifest: Manifest | None = None,
    names: Iterable[str] | None = None,
    root: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Path]:
    """Resolve every group (or the named ones); returns group name -> directory."""
    manifest = manifest or load_manifest()
    wanted = list(names) if names else list(manifest.groups)
    unknown = [n for n in wanted if n not in manifest.groups]
    if unknown:
        raise ArtifactResolutionError(
            f"unknown jar groups {unknown}; the manifest has {sorted(manifest.groups)}"
        )
    result: dict[str, Path] = {}
    for i, name in enumerate(wanted, 1):
        group = manifest.groups[name]
        cached = is_resolved(group, root)
        if progress:
            state = "cached" if cached else "resolving from Maven Central"
            progress(f"[{i}/{len(wanted)}] {name}: {state}")
        result[name] = resolve_group(group, root)
    return result
