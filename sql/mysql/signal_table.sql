-- Debezium's signal table: `cdcmirror repair` asks the connector for incremental snapshots
-- by inserting a row here, and the connector writes its snapshot watermarks here. cdcmirror
-- never mirrors it. Run as an administrator in the mirrored database:
--   mariadb shop < signal_table.sql

CREATE TABLE IF NOT EXISTS cdcmirror_signal (
    id varchar(64) PRIMARY KEY,
    type varchar(32) NOT NULL,
    data text NULL
);
SET @stmt = CONCAT('GRANT INSERT ON `', REPLACE(DATABASE(), '`', '``'),
                   '`.cdcmirror_signal TO ''cdc''@''127.0.0.1''');
PREPARE stmt FROM @stmt; EXECUTE stmt; DEALLOCATE PREPARE stmt;
SET @stmt = CONCAT('GRANT INSERT ON `', REPLACE(DATABASE(), '`', '``'),
                   '`.cdcmirror_signal TO ''cdc''@''localhost''');
PREPARE stmt FROM @stmt; EXECUTE stmt; DEALLOCATE PREPARE stmt;
