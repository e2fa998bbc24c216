# Kafka Connect (distributed) with the Debezium connectors cdcmirror pins, resolved from
# Maven Central with Maven, like `cdcmirror jars resolve` does natively.
ARG KAFKA_VERSION=4.1.1
FROM maven:3.9-eclipse-temurin-17 AS plugins
ARG DEBEZIUM_VERSION=3.5.0.Final
RUN for c in postgres mysql mariadb; do \
      mkdir -p /plugins/debezium-$c && \
      mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
        -Dartifact=io.debezium:debezium-connector-$c:${DEBEZIUM_VERSION}:tar.gz:plugin \
        -DoutputDirectory=/tmp && \
      tar -xzf /tmp/debezium-connector-$c-${DEBEZIUM_VERSION}-plugin.tar.gz -C /plugins/debezium-$c; \
    done

FROM apache/kafka:${KAFKA_VERSION}
COPY --from=plugins /plugins /opt/connect-plugins
COPY connect-distributed.properties /opt/kafka/config/cdcmirror-connect.properties
EXPOSE 8083
CMD ["/opt/kafka/bin/connect-distributed.sh", "/opt/kafka/config/cdcmirror-connect.properties"]
