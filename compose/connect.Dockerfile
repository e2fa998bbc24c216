# Kafka Connect (distributed) with the Debezium connectors cdcmirror pins, resolved from
# Maven Central with Maven, like `cdcmirror jars resolve` does natively.
ARG KAFKA_VERSION=4.1.1
FROM maven:3.9-eclipse-temurin-17 AS plugins
ARG DEBEZIUM_VERSION=3.5.0.Final
ARG APICURIO_VERSION=2.6.13.Final
# Apicurio's Avro converter (kafka.format = "avro") with its dependencies, minus what the
# worker has, plus the ServiceLoader entry the worker discovers it by
RUN printf '<project><modelVersion>4.0.0</modelVersion><groupId>c</groupId><artifactId>c</artifactId><version>0</version><dependencies><dependency><groupId>io.apicurio</groupId><artifactId>apicurio-registry-utils-converter</artifactId><version>%s</version></dependency></dependencies></project>' "${APICURIO_VERSION}" > /tmp/pom.xml && \
    mvn -B -q -f /tmp/pom.xml org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DoutputDirectory=/plugins/apicurio-converter -DincludeScope=runtime \
      -DexcludeArtifactIds=connect-api,connect-json,kafka-clients,slf4j-api,lz4-java,snappy-java,zstd-jni && \
    mkdir -p /tmp/svc/META-INF/services && \
    echo io.apicurio.registry.utils.converter.AvroConverter > /tmp/svc/META-INF/services/org.apache.kafka.connect.storage.Converter && \
    jar cf /plugins/apicurio-converter/cdcmirror-service-entries.jar -C /tmp/svc .
RUN for c in postgres mysql mariadb; do \
      mkdir -p /plugins/debezium-$c && \
      mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
        -Dartifact=io.debezium:debezium-connector-$c:${DEBEZIUM_VERSION}:tar.gz:plugin \
        -DoutputDirectory=/tmp && \
      tar -xzf /tmp/debezium-connector-$c-${DEBEZIUM_VERSION}-plugin.tar.gz -C /plugins/debezium-$c; \
    done
# cdcmirror's converter of MariaDB UUID columns (cdcmirror/jvm/java_parts.py), in the MariaDB
# plugin's directory: built against its Debezium API and Kafka Connect's API
ARG KAFKA_VERSION
COPY cdcmirror/jvm/java/mariadb-uuid /src/mariadb-uuid
RUN mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact=org.apache.kafka:connect-api:${KAFKA_VERSION} -DoutputDirectory=/tmp/api && \
    javac --release 17 -nowarn -d /tmp/uuid \
      -cp "$(ls /plugins/debezium-mariadb/*/debezium-api-*.jar):$(ls /tmp/api/connect-api-*.jar)" \
      $(find /src/mariadb-uuid -name '*.java') && \
    jar cf "$(dirname "$(ls /plugins/debezium-mariadb/*/debezium-api-*.jar)")/cdcmirror-mariadb-uuid.jar" \
      -C /tmp/uuid .

FROM apache/kafka:${KAFKA_VERSION}
COPY --from=plugins /plugins /opt/connect-plugins
COPY compose/connect-distributed.properties /opt/kafka/config/cdcmirror-connect.properties
# the REST API's basic auth (the extension's jar ships in the distribution's libs/)
COPY compose/connect-jaas.conf compose/connect-users.properties /opt/kafka/config/
ENV KAFKA_OPTS="-Djava.security.auth.login.config=/opt/kafka/config/connect-jaas.conf"
EXPOSE 8083
CMD ["/opt/kafka/bin/connect-distributed.sh", "/opt/kafka/config/cdcmirror-connect.properties"]
