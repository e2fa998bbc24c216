-- The publication Debezium's pgoutput plugin reads. The connector runs with
-- publication.autocreate.mode = disabled, so it never needs the rights to create or alter
-- publications itself; the DBA creates this one (FOR TABLES IN SCHEMA needs a superuser
-- on PostgreSQL 15). Run while connected to the source database:
--   psql -v schema=public -d shop -f publication.sql
-- Tables created later in the schema are published automatically.

SELECT format('CREATE PUBLICATION cdcmirror FOR TABLES IN SCHEMA %I', :'schema')
WHERE NOT EXISTS (SELECT FROM pg_publication WHERE pubname = 'cdcmirror') \gexec
