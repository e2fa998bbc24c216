package io.cdcmirror.peers;

import java.time.LocalDate;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.functions.ScalarFunction;

/** Kafka Connect's Date: days since the epoch. */
public class ConnectDate extends ScalarFunction {
    public @DataTypeHint("DATE") LocalDate eval(Integer days) {
        return days == null ? null : LocalDate.ofEpochDay(days);
    }
}
