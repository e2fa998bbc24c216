#!/usr/bin/env bash
# System packages cdcmirror's development and CI need, from Debian, when missing:
# a JDK 17+ (Kafka, Connect, Spark; its javac builds cdcmirror's local file system for
# Spark, cdcmirror/jvm/local_fs.py), Maven (resolves the pinned jars), the docker-compose
# client (validates compose/; no engine needed). Databases: scripts/provision-sources.sh.
set -euo pipefail
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=()
{ command -v java && command -v javac; } >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1; then
  missing+=(docker-compose)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-system-deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
java_major="$(java -version 2>&1 | sed -nE 's/.*version "([0-9]+).*/\1/p' | head -1)"
if [ "${java_major:-0}" -lt 17 ]; then
  echo "install-system-deps: Java 17 or newer is needed, found ${java_major:-none}" >&2
  exit 2
fi
