from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cdcmirror.exceptions import ArtifactResolutionError
from cdcmirror.jvm.manifest import (
    Coordinate,
    build_pom,
    load_manifest,
    parse_manifest,
    spark_line,
    unresolved_coordinate,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("line", ["4.0", "4.1"])
def test_shipped_manifest_pins_one_version_per_line(line: str) -> None:
    manifest = load_manifest(line)
    assert manifest.line == line and manifest.lines == ("4.1", "4.0")
    assert spark_line(manifest.versions["spark"]) == line
    assert set(manifest.groups) == {
        "kafka",
        "debezium-postgres",
        "debezium-mysql",
        "debezium-mariadb",
        "spark",
        "apicurio-registry",
        "apicurio-converter",
        "rest-catalog",
    }
    coords = [c for g in manifest.groups.values() for c in g.artifacts]
    for c in coords:
        if c.group == "org.apache.spark":  # one release, but for the two pinned apart
            key = {
                f"spark-token-provider-kafka-0-10_{manifest.versions['spark_scala']}": (
                    "spark_token_provider"
                ),
                f"spark-avro_{manifest.versions['spark_scala']}": "spark_avro",
            }.get(c.artifact, "spark")
            assert c.version == manifest.versions[key]
            assert spark_line(c.version) == line
        if c.group == "io.debezium":
            assert c.version == manifest.versions["debezium"]
        if c.group == "org.apache.kafka":
            assert c.version == manifest.versions["kafka"]
        if c.group == "io.apicurio":  # registry and converter: one release
            assert c.version == manifest.versions["apicurio"]
        if c.group == "org.apache.iceberg":  # the Spark runtime and its S3 bundle: one release
            rest = c in manifest.groups["rest-catalog"].artifacts
            assert c.version == manifest.versions["iceberg_rest" if rest else "iceberg"]
        if c.group.startswith("org.apache.iceberg") and "spark-runtime" in c.artifact:
            assert c.artifact == f"iceberg-spark-runtime-{line}_{manifest.versions['spark_scala']}"
        if c.group.startswith("org.eclipse.jetty"):
            assert c.version == manifest.versions["jetty"]


def test_archive_groups_and_service_entries() -> None:
    from cdcmirror.jvm.manifest import build_pom

    text = (
        '[versions]\nv="1"\n[groups.app]\nartifacts=["g:app:{v}:tar.gz:all"]\nunpack=true\n'
        '[groups.p]\nartifacts=["g:p:{v}"]\nservices=["I=Impl"]\n'
    )
    groups = parse_manifest(text).groups
    pom = build_pom(groups["app"])
    assert "<type>tar.gz</type><classifier>all</classifier>" in pom
    assert "<exclusion><groupId>*</groupId>" in pom  # the archive carries its dependencies
    assert "<exclusion>" not in build_pom(groups["p"])
    assert str(groups["app"].artifacts[0]) == "g:app:1:tar.gz:all"
    plain = parse_manifest('[versions]\nv="1"\n[groups.p]\nartifacts=["g:p:{v}"]\n')
    assert groups["p"].fingerprint() != plain.groups["p"].fingerprint()


def test_artifacts_fetched_alone_bring_no_dependencies() -> None:
    text = '[versions]\nv="1"\n[groups.s]\nartifacts=["g:a:{v}", "g:b:{v}"]\nalone=["g:b"]\n'
    group = parse_manifest(text).groups["s"]
    pom = build_pom(group)
    a, b = pom.split("<dependency>")[1:]
    assert "<exclusion>" not in a and "<exclusion><groupId>*</groupId>" in b
    plain = parse_manifest(text.replace('alone=["g:b"]\n', "")).groups["s"]
    assert group.fingerprint() != plain.fingerprint()
    s3a = load_manifest().groups["spark"]
    names = {f"{c.group}:{c.artifact}" for c in s3a.artifacts}
    assert set(s3a.alone) <= names  # each names an artefact of its group


def test_unpack_and_service_jar(tmp_path: Path) -> None:
    import io
    import tarfile
    import zipfile

    from cdcmirror.jvm.resolve import unpack_archives, write_service_jar

    with tarfile.open(tmp_path / "app-all.tar.gz", "w:gz") as tar:
        data = b"jar bytes"
        info = tarfile.TarInfo("app-runner.jar")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    unpack_archives(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["app-runner.jar"]
    write_service_jar(tmp_path / "s.jar", ("a.I=x.A", "a.I=x.B", "b.J=y.C"))
    with zipfile.ZipFile(tmp_path / "s.jar") as jar:
        assert jar.read("META-INF/services/a.I") == b"x.A\nx.B\n"
        assert jar.read("META-INF/services/b.J") == b"y.C\n"


def test_pyspark_pin_matches_the_manifest() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = [d for d in project["project"]["dependencies"] if d.startswith("pyspark")]
    default = load_manifest(load_manifest().lines[0])
    assert pins == [f"pyspark=={default.versions['spark']}"]


def test_a_line_changes_only_the_spark_groups_jars() -> None:
    default, other = load_manifest("4.1"), load_manifest("4.0")
    for name, group in default.groups.items():
        if name == "spark":
            assert group.by_line and group.path == "spark-4.1.3"
            assert other.groups[name].path == "spark-4.0.0"
            assert group.fingerprint() != other.groups[name].fingerprint()
        else:
            assert other.groups[name] == group, name


def test_a_spark_line_the_manifest_lacks_is_named_with_the_lines_it_has() -> None:
    with pytest.raises(ArtifactResolutionError, match=r"Spark 3\.5 .* 4\.1, 4\.0:"):
        load_manifest("3.5")


def test_fingerprint_changes_with_the_spec() -> None:
    a = parse_manifest('[versions]\nv="1"\n[groups.g]\nartifacts=["x:y:{v}"]\n').groups["g"]
    b = parse_manifest('[versions]\nv="2"\n[groups.g]\nartifacts=["x:y:{v}"]\n').groups["g"]
    c = parse_manifest(
        '[versions]\nv="1"\n[groups.g]\nartifacts=["x:y:{v}"]\nexclude=["z"]\n'
    ).groups["g"]
    assert len({a.fingerprint(), b.fingerprint(), c.fingerprint()}) == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[groups.g]\nartifacts=["x:y"]\n', "not of the form group:artifact:version"),
        ('[groups.g]\nartifacts=["x:y:{nope}"]\n', "names version 'nope'"),
        ('[groups.g]\nartifacts=["x:y:1"]\nextra=1\n', "unknown keys ['extra']"),
    ],
    ids=["short-coordinate", "unknown-version", "unknown-key"],
)
def test_bad_manifest_is_named(text: str, message: str) -> None:
    with pytest.raises(ArtifactResolutionError, match=message.replace("[", r"\[")):
        parse_manifest(text)


def test_pom_lists_the_artifacts() -> None:
    group = parse_manifest('[groups.g]\nartifacts=["a.b:c:1.0", "d:e:2"]\n').groups["g"]
    pom = build_pom(group)
    assert "<groupId>a.b</groupId><artifactId>c</artifactId><version>1.0</version>" in pom
    assert pom.count("<dependency>") == 2


def test_unresolved_coordinate_from_maven_output() -> None:
    out = (
        "[ERROR] Failed to execute goal on project x: Could not resolve dependencies: "
        "Could not find artifact org.nope:thing:jar:9.9 in cdcmirror-central (https://r)"
    )
    assert unresolved_coordinate(out) == "org.nope:thing:jar:9.9"
    assert unresolved_coordinate("[ERROR] something else") is None
    assert str(Coordinate.parse("a:b:c")) == "a:b:c"
