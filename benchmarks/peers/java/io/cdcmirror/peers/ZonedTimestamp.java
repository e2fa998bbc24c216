package io.cdcmirror.peers;

import java.time.Instant;
import java.time.OffsetDateTime;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.functions.ScalarFunction;

/** Debezium's ZonedTimestamp: an ISO-8601 text with its offset. */
public class ZonedTimestamp extends ScalarFunction {
    public @DataTypeHint("TIMESTAMP_LTZ(6)") Instant eval(String text) {
        return text == null ? null : OffsetDateTime.parse(text).toInstant();
    }
}
