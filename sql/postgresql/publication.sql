-- The publication Debezium's pgoutput plugin reads. The connector runs with
-- publication.autocreate.mode = disabled, so it never needs the rights to create or alter
-- publications itself; the DBA creates this one (FOR TABLES IN SCHEMA needs a superuser
-- on PostgreSQL 15). Run while connected to the source database:
--   psql -v schema=public -d shop -f publication.sql
-- Tables created later in the schema are published automatically. Partitioned tables are
-- published as their parent (publish_via_partition_root), which is how cdcmirror mirrors them.
--
-- BEFORE you run it: PostgreSQL refuses every UPDATE and DELETE on a published table that has
-- no replica identity ("cannot update table ... because it does not have a replica identity
-- and publishes updates"). Every table of the schema is published, mirrored or not. Give each
-- table without a primary key one first:
--   ALTER TABLE s.t REPLICA IDENTITY USING INDEX t_unique_not_null_idx;  -- or
--   ALTER TABLE s.t REPLICA IDENTITY FULL;                               -- keyless tables
-- `cdcmirror bootstrap --dry-run` lists every such table with its statement.

SELECT format('CREATE PUBLICATION cdcmirror FOR TABLES IN SCHEMA %I', :'schema')
WHERE NOT EXISTS (SELECT FROM pg_publication WHERE pubname = 'cdcmirror') \gexec
ALTER PUBLICATION cdcmirror SET (publish_via_partition_root = true);
