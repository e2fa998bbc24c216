# cdcmirror with its Spark jars, for the compose cluster profile: the Spark master and
# workers run pyspark's spark-class from it (the executors run cdcmirror's Python: the Avro
# decoder, decimals wider than 38 digits), and the mirror's driver runs in it too.
# Build context: the repository root (see docker-compose.yml).
FROM python:3.11-slim-bookworm
RUN apt-get update && \
    apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven procps && \
    rm -rf /var/lib/apt/lists/*
WORKDIR /opt/cdcmirror
COPY pyproject.toml README.md ./
COPY cdcmirror ./cdcmirror
RUN pip install --no-cache-dir . && cdcmirror jars resolve spark
ENV PYSPARK_PYTHON=/usr/local/bin/python
WORKDIR /work
ENTRYPOINT []
