#!/bin/sh
# Runs once inside the postgres container: the same source-side setup a DBA runs (sql/).
set -e
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" \
  -v cdc_password=cdc_dev_secret -v schema=public -v table_owner="$POSTGRES_USER" \
  -f /cdcmirror-sql/replication_user.sql
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -v schema=public \
  -f /cdcmirror-sql/publication.sql
