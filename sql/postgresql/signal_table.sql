-- Debezium's signal table: `cdcmirror repair` asks the connector for incremental snapshots
-- by inserting a row here, and the connector writes its snapshot watermarks here. It must
-- be in the cdcmirror publication (publication.sql publishes the whole schema, so a table
-- created in that schema is covered). cdcmirror never mirrors it.
-- Run while connected to the source database:
--   psql -v schema=public -d shop -f signal_table.sql

CREATE TABLE IF NOT EXISTS :"schema".cdcmirror_signal (
    id varchar(64) PRIMARY KEY,
    type varchar(32) NOT NULL,
    data text NULL
);
GRANT SELECT, INSERT ON :"schema".cdcmirror_signal TO cdc;
