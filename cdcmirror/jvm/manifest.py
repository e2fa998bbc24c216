"""The JVM artefact manifest: pure parsing and the Maven project text each group resolves with."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from importlib import metadata, resources
from xml.sax.saxutils import escape

from cdcmirror.exceptions import ArtifactResolutionError


@dataclass(frozen=True)
class Coordinate:
    """A Maven coordinate ``group:artifact:version[:type:classifier]``."""

    group: str
    artifact: str
    version: str
    type: str = "jar"
    classifier: str = ""

    @classmethod
    def parse(cls, text: str) -> Coordinate:
        """Parse ``g:a:v`` or ``g:a:v:type:classifier``.

        >>> Coordinate.parse("org.apache.kafka:kafka_2.13:4.1.1").artifact
        'kafka_2.13'
        >>> Coordinate.parse("io.apicurio:app:2.6:tar.gz:all").classifier
        'all'
        """
        parts = text.split(":")
        if len(parts) not in (3, 5) or not all(parts):
            raise ArtifactResolutionError(
                f"manifest coordinate {text!r} is not of the form group:artifact:version "
                "or group:artifact:version:type:classifier"
            )
        return cls(*parts)

    def __str__(self) -> str:
        base = f"{self.group}:{self.artifact}:{self.version}"
        return (
            base
            if (self.type, self.classifier) == ("jar", "")
            else (f"{base}:{self.type}:{self.classifier}")
        )


@dataclass(frozen=True)
class ArtifactGroup:
    """One directory of jars: the artefacts, their runtime dependencies, minus exclusions."""

    name: str
    path: str
    artifacts: tuple[Coordinate, ...]
    exclude: tuple[str, ...]
    # archives (tar.gz, zip) unpacked into the directory, their own dependencies not fetched
    unpack: bool = False
    # ServiceLoader entries "interface=implementation" for jars that lack them (Kafka
    # Connect finds plugins through these)
    services: tuple[str, ...] = ()
    # "group:artifact" of artefacts fetched without their dependencies (the group carries
    # what they need in another form, e.g. the AWS SDK inside iceberg-aws-bundle)
    alone: tuple[str, ...] = ()
    # the group follows the Spark line of the installed pyspark (``[lines.X]`` versions)
    by_line: bool = False

    def fingerprint(self) -> str:
        """A hash of everything that decides the group's content; a change means re-resolve."""
        spec: dict[str, object] = {
            "artifacts": [str(a) for a in self.artifacts],
            "exclude": sorted(self.exclude),
        }
        if self.unpack:
            spec["unpack"] = True
        if self.services:
            spec["services"] = sorted(self.services)
        if self.alone:
            spec["alone"] = sorted(self.alone)
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Manifest:
    """All pinned versions and artefact groups, for one Spark line."""

    versions: dict[str, str]
    groups: dict[str, ArtifactGroup]
    # the Spark line ("4.1") the ``by_line`` groups were expanded for, and every line the
    # manifest supports, the default first
    line: str = ""
    lines: tuple[str, ...] = ()


def _newest_first(line: str) -> tuple[int, ...]:
    return tuple(-int(part) for part in line.split(".") if part.isdigit())


def spark_line(version: str) -> str:
    """The Spark line of a Spark (or pyspark) version: its major and minor.

    >>> spark_line("4.1.1"), spark_line("3.5.7"), spark_line("4.0.0.dev1")
    ('4.1', '3.5', '4.0')
    """
    return ".".join(version.split(".")[:2])


GROUP_KEYS = {"artifacts", "exclude", "path", "unpack", "services", "alone", "by_line"}


def parse_manifest(text: str, line: str | None = None) -> Manifest:
    """Parse the manifest TOML, substituting ``{name}`` with ``[versions]`` entries.

    ``line``: a Spark line of ``[lines]`` whose versions replace ``[versions]`` in the
    groups marked ``by_line``; None or the default line (that of ``[versions] spark``)
    keeps ``[versions]``.

    >>> m = parse_manifest('''
    ... [versions]
    ... k = "1.0"
    ... [groups.a]
    ... artifacts = ["g:a_{k}:{k}"]
    ... ''')
    >>> str(m.groups["a"].artifacts[0]), m.groups["a"].path
    ('g:a_1.0:1.0', 'a')
    """
    data = tomllib.loads(text)
    versions = {str(k): str(v) for k, v in data.get("versions", {}).items()}
    default = spark_line(versions.get("spark", ""))
    overrides: dict[str, dict[str, str]] = {
        str(name): {str(k): str(v) for k, v in spec.items()}
        for name, spec in data.get("lines", {}).items()
    }
    lines = (default, *sorted(overrides, key=_newest_first))
    chosen = default if line is None else line
    if chosen != default and chosen not in overrides:
        raise ArtifactResolutionError(
            f"Spark {chosen} is not a line cdcmirror runs on; it runs on "
            f"{', '.join(lines)}: install one of those pyspark versions "
            "(docs: Spark and Iceberg versions)"
        )
    line_versions = {**versions, **overrides.get(chosen, {})}
    for table in (versions, line_versions):
        if "spark" in table:
            table["spark_line"] = spark_line(table["spark"])

    def expand(value: str, by_line: bool) -> str:
        try:
            return value.format(**(line_versions if by_line else versions))
        except KeyError as exc:
            raise ArtifactResolutionError(
                f"manifest entry {value!r} names version {exc.args[0]!r}, "
                "which [versions] does not define"
            ) from exc

    groups: dict[str, ArtifactGroup] = {}
    for name, spec in data.get("groups", {}).items():
        unknown = set(spec) - GROUP_KEYS
        if unknown:
            raise ArtifactResolutionError(
                f"manifest group {name!r} has unknown keys {sorted(unknown)}"
            )
        by_line = bool(spec.get("by_line", False))
        groups[name] = ArtifactGroup(
            name=name,
            path=expand(spec.get("path", name), by_line),
            artifacts=tuple(Coordinate.parse(expand(a, by_line)) for a in spec["artifacts"]),
            exclude=tuple(expand(e, by_line) for e in spec.get("exclude", [])),
            unpack=bool(spec.get("unpack", False)),
            services=tuple(spec.get("services", [])),
            alone=tuple(expand(a, by_line) for a in spec.get("alone", [])),
            by_line=by_line,
        )
    return Manifest(versions=line_versions, groups=groups, line=chosen, lines=lines)


def installed_spark_line() -> str | None:
    """The Spark line of the installed pyspark, None when pyspark's metadata is absent (a
    driver under spark-submit whose pyspark comes from SPARK_HOME: its jars are --jars)."""
    try:
        return spark_line(metadata.version("pyspark"))
    except metadata.PackageNotFoundError:
        return None


def load_manifest(line: str | None = None) -> Manifest:
    """The manifest shipped with the package, for ``line`` (default: the installed
    pyspark's Spark line)."""
    text = resources.files("cdcmirror.jvm").joinpath("manifest.toml").read_text("utf-8")
    return parse_manifest(text, line or installed_spark_line())


def build_pom(group: ArtifactGroup) -> str:
    """A throw-away Maven project whose dependencies are the group's artefacts."""
    # an unpacked archive brings everything it needs: none of its POM's dependencies
    no_deps = (
        "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion>"
        "</exclusions>"
    )

    def exclusions(c: Coordinate) -> str:
        return no_deps if group.unpack or f"{c.group}:{c.artifact}" in group.alone else ""

    deps = "\n".join(
        "    <dependency>"
        f"<groupId>{escape(c.group)}</groupId>"
        f"<artifactId>{escape(c.artifact)}</artifactId>"
        f"<version>{escape(c.version)}</version>"
        + (f"<type>{escape(c.type)}</type>" if c.type != "jar" else "")
        + (f"<classifier>{escape(c.classifier)}</classifier>" if c.classifier else "")
        + exclusions(c)
        + "</dependency>"
        for c in group.artifacts
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>cdcmirror.resolve</groupId>\n"
        f"  <artifactId>{escape(group.name)}</artifactId>\n"
        "  <version>0</version>\n"
        "  <packaging>pom</packaging>\n"
        f"  <dependencies>\n{deps}\n  </dependencies>\n"
        "</project>\n"
    )


def build_settings(repository_url: str) -> str:
    """Maven settings that send every repository request to one place.

    Some upstream POMs declare repositories of their own; routing them all to the
    configured repository keeps resolution on Maven Central (or the user's mirror).
    """
    return (
        "<settings><mirrors><mirror><id>cdcmirror-central</id><mirrorOf>*</mirrorOf>"
        f"<url>{escape(repository_url)}</url></mirror></mirrors></settings>\n"
    )


def unresolved_coordinate(maven_output: str) -> str | None:
    """The coordinate Maven names as missing in its output, if it names one.

    >>> unresolved_coordinate("[ERROR] ... Could not find artifact org.x:y:jar:1.0 in c (u)")
    'org.x:y:jar:1.0'
    """
    for marker in (
        "Could not find artifact ",
        "Failed to read artifact descriptor for ",
        "Could not transfer artifact ",
    ):
        start = maven_output.find(marker)
        if start >= 0:
            rest = maven_output[start + len(marker) :]
            return rest.split()[0].rstrip(":")
    return None
