-- Least-privilege role for the Debezium PostgreSQL connector (pgoutput).
-- Run as a role with CREATEROLE (or superuser) while connected to the source database:
--   psql -v cdc_password="$CDC_PASSWORD" -v schema=public -v table_owner=app \
--        -d shop -f replication_user.sql
-- table_owner is the role that creates the application's tables.
-- The role can log in, start logical replication (REPLICATION attribute, needed to create
-- and read the replication slot) and read the mirrored schema; nothing else.
-- It is not a superuser and owns no tables.

SELECT 'CREATE ROLE cdc LOGIN REPLICATION'
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cdc') \gexec

ALTER ROLE cdc WITH LOGIN REPLICATION NOSUPERUSER NOCREATEDB NOCREATEROLE
    PASSWORD :'cdc_password';

GRANT CONNECT ON DATABASE :"DBNAME" TO cdc;
GRANT USAGE ON SCHEMA :"schema" TO cdc;
-- The initial snapshot reads every mirrored table.
GRANT SELECT ON ALL TABLES IN SCHEMA :"schema" TO cdc;
-- Tables the owner role creates later are readable too.
ALTER DEFAULT PRIVILEGES FOR ROLE :"table_owner" IN SCHEMA :"schema"
    GRANT SELECT ON TABLES TO cdc;
