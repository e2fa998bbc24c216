/*
 * A Debezium custom converter for MariaDB UUID columns, registered by `cdcmirror bootstrap`
 * on MariaDB connectors (converters=cdcmirror_uuid). MariaDB writes a UUID to the binlog as
 * its 16 bytes with the trailing zero bytes dropped; Debezium's own converter reads the
 * shorter value as a number, which puts the missing zeros in front (...63347686bd00 arrives
 * as 00e713f4-...). The binlog's bytes still say how many were dropped (16 less their
 * count): they are put back at the end. Values read through JDBC (snapshots) arrive as text
 * and are only normalised. The field keeps Debezium's schema (string io.debezium.data.Uuid).
 */
package io.cdcmirror.debezium;

import io.debezium.spi.converter.CustomConverter;
import io.debezium.spi.converter.RelationalColumn;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.connect.data.SchemaBuilder;

public final class MariaDbUuidConverter
    implements CustomConverter<SchemaBuilder, RelationalColumn> {
  static final int UUID_BYTES = 16;
  static final int UUID_TEXT = 36;

  @Override
  public void configure(Properties props) {}

  @Override
  public void converterFor(
      RelationalColumn column, ConverterRegistration<SchemaBuilder> registration) {
    if (!"UUID".equalsIgnoreCase(column.typeName())) {
      return;
    }
    SchemaBuilder schema = SchemaBuilder.string().name("io.debezium.data.Uuid").version(1);
    if (column.isOptional()) {
      schema.optional();
    }
    registration.register(schema, MariaDbUuidConverter::text);
  }

  /** The UUID's text, whatever form the value came in; null stays null. */
  static Object text(Object value) {
    if (value == null) {
      return null;
    }
    if (value instanceof byte[] bytes) {
      return ofBytes(bytes);
    }
    if (value instanceof ByteBuffer buffer) {
      byte[] bytes = new byte[buffer.remaining()];
      buffer.duplicate().get(bytes);
      return ofBytes(bytes);
    }
    if (value instanceof UUID uuid) {
      return uuid.toString();
    }
    if (value instanceof String text) {
      return UUID.fromString(text.trim()).toString();
    }
    throw new IllegalArgumentException(
        "cdcmirror: a MariaDB UUID value of an unexpected kind: " + value.getClass().getName());
  }

  static String ofBytes(byte[] bytes) {
    if (bytes.length == UUID_TEXT) {
      return UUID.fromString(new String(bytes, StandardCharsets.US_ASCII)).toString();
    }
    if (bytes.length > UUID_BYTES) {
      throw new IllegalArgumentException(
          "cdcmirror: a MariaDB UUID value of " + bytes.length + " bytes");
    }
    ByteBuffer whole = ByteBuffer.wrap(Arrays.copyOf(bytes, UUID_BYTES));
    return new UUID(whole.getLong(), whole.getLong()).toString();
  }
}
