package io.cdcmirror.peers;

import java.time.LocalDateTime;
import java.time.ZoneOffset;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.functions.ScalarFunction;

/** Debezium's MicroTimestamp: microseconds since the epoch, a wall-clock time. */
public class MicroTimestamp extends ScalarFunction {
    public @DataTypeHint("TIMESTAMP(6)") LocalDateTime eval(Long micros) {
        if (micros == null) {
            return null;
        }
        long seconds = Math.floorDiv(micros, 1_000_000L);
        int nanos = (int) Math.floorMod(micros, 1_000_000L) * 1000;
        return LocalDateTime.ofEpochSecond(seconds, nanos, ZoneOffset.UTC);
    }
}
