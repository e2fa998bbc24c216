package io.cdcmirror.peers;

import java.math.BigDecimal;
import java.math.BigInteger;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.functions.ScalarFunction;

/** Kafka Connect's Decimal: the unscaled value's big-endian two's complement bytes. */
public class ConnectDecimal extends ScalarFunction {
    public @DataTypeHint("DECIMAL(38, 18)") BigDecimal eval(byte[] unscaled, Integer scale) {
        if (unscaled == null || scale == null) {
            return null;
        }
        return new BigDecimal(new BigInteger(unscaled), scale);
    }
}
