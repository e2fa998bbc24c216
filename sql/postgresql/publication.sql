-- The publication Debezium's pgoutput plugin reads. The connector runs with
-- publication.autocreate.mode = disabled, so it never needs the rights to create or alter
-- publications itself; the DBA creates this one (FOR TABLES IN SCHEMA needs a superuser
-- on PostgreSQL 15). Run while connected to the source database:
--   psql -v schema=public -d shop -f publication.sql
-- Tables created later in the schema are published automatically. Partitioned tables are
-- published as their parent (publish_via_partition_root), which is how cdcmirror mirrors them.

SELECT format('CREATE PUBLICATION cdcmirror FOR TABLES IN SCHEMA %I', :'schema')
WHERE NOT EXISTS (SELECT FROM pg_publication WHERE pubname = 'cdcmirror') \gexec
ALTER PUBLICATION cdcmirror SET (publish_via_partition_root = true);
