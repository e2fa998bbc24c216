#!/usr/bin/env bash
# Install (when missing), configure and start the source databases for development and CI:
#   PostgreSQL with logical replication (wal_level=logical) on 127.0.0.1:5432
#   MariaDB with a row-based binlog on 127.0.0.1:3306
# then create the development databases (shop, cdcmirror_it), an admin login for tests and
# the least-privilege replication user from sql/. Safe to run again. Needs root (or sudo).
#
# Development credentials (override through the environment; never use them in production):
#   CDCMIRROR_DEV_ADMIN_PASSWORD  (default cdcmirror_admin)  user cdcmirror_admin
#   CDCMIRROR_DEV_CDC_PASSWORD    (default cdc_dev_secret)   user cdc
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ADMIN_PASSWORD="${CDCMIRROR_DEV_ADMIN_PASSWORD:-cdcmirror_admin}"
CDC_PASSWORD="${CDCMIRROR_DEV_CDC_PASSWORD:-cdc_dev_secret}"
DATABASES=(shop cdcmirror_it)

SUDO=""
AS_POSTGRES=(runuser -u postgres --)
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "provision-sources: needs root or sudo" >&2; exit 2; }
  SUDO="sudo"
  AS_POSTGRES=(sudo -u postgres)
fi
log() { echo "provision-sources: $*" >&2; }

# --- packages -----------------------------------------------------------------------------
missing=()
command -v pg_lsclusters >/dev/null 2>&1 || missing+=(postgresql postgresql-contrib)
command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server mariadb-client)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# --- PostgreSQL ---------------------------------------------------------------------------
PG_VERSION="$(ls /usr/lib/postgresql | sort -V | tail -1)"
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -qx "$PG_VERSION main"; then
  log "creating PostgreSQL $PG_VERSION cluster 'main'"
  $SUDO pg_createcluster "$PG_VERSION" main >/dev/null
fi
PG_CONF_DIR="/etc/postgresql/$PG_VERSION/main/conf.d"
$SUDO mkdir -p "$PG_CONF_DIR"
if ! cmp -s "$HERE/sql/postgresql/server.conf" "$PG_CONF_DIR/cdcmirror.conf"; then
  $SUDO cp "$HERE/sql/postgresql/server.conf" "$PG_CONF_DIR/cdcmirror.conf"
  PG_RESTART=1
fi
pg_status="$(pg_lsclusters -h | awk -v v="$PG_VERSION" '$1==v && $2=="main" {print $4}')"
if [ "$pg_status" != "online" ]; then
  log "starting PostgreSQL $PG_VERSION"
  $SUDO pg_ctlcluster "$PG_VERSION" main start
elif [ "${PG_RESTART:-0}" = 1 ]; then
  log "restarting PostgreSQL $PG_VERSION for the new settings"
  $SUDO pg_ctlcluster "$PG_VERSION" main restart
fi
for _ in $(seq 1 60); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
pg_isready -q -h 127.0.0.1 -p 5432 || { log "PostgreSQL is not accepting connections"; exit 1; }

psql_admin() { "${AS_POSTGRES[@]}" psql -X -q -v ON_ERROR_STOP=1 "$@"; }
[ "$(psql_admin -tAc 'SHOW wal_level')" = logical ] || { log "wal_level is not logical"; exit 1; }
psql_admin -d postgres -v pw="$ADMIN_PASSWORD" <<'SQL'
SELECT 'CREATE ROLE cdcmirror_admin LOGIN SUPERUSER'
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cdcmirror_admin') \gexec
ALTER ROLE cdcmirror_admin PASSWORD :'pw';
SQL
for db in "${DATABASES[@]}"; do
  psql_admin -d postgres -v db="$db" <<'SQL'
SELECT format('CREATE DATABASE %I OWNER cdcmirror_admin', :'db')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db') \gexec
SQL
  psql_admin -d "$db" -v cdc_password="$CDC_PASSWORD" -v schema=public \
    -v table_owner=cdcmirror_admin \
    -f "$HERE/sql/postgresql/replication_user.sql"
  psql_admin -d "$db" -v schema=public -f "$HERE/sql/postgresql/publication.sql"
done
log "PostgreSQL $PG_VERSION ready on 127.0.0.1:5432 (wal_level=logical)"

# --- MariaDB ------------------------------------------------------------------------------
MY_CONF="/etc/mysql/mariadb.conf.d/99-cdcmirror.cnf"
if ! cmp -s "$HERE/sql/mysql/server.cnf" "$MY_CONF"; then
  $SUDO cp "$HERE/sql/mysql/server.cnf" "$MY_CONF"
  MY_RESTART=1
fi
if ! $SUDO mariadb-admin ping >/dev/null 2>&1; then
  log "starting MariaDB"
  $SUDO /etc/init.d/mariadb start >/dev/null
elif [ "${MY_RESTART:-0}" = 1 ]; then
  log "restarting MariaDB for the new settings"
  $SUDO /etc/init.d/mariadb restart >/dev/null
fi
for _ in $(seq 1 60); do $SUDO mariadb-admin ping >/dev/null 2>&1 && break; sleep 0.5; done
$SUDO mariadb-admin ping >/dev/null 2>&1 || { log "MariaDB is not accepting connections"; exit 1; }
[ "$($SUDO mariadb -N -e 'SELECT @@log_bin, @@binlog_format')" = "$(printf '1\tROW')" ] \
  || { log "MariaDB binlog is not ROW"; exit 1; }
# SQL string literal: backslashes doubled, single quotes doubled.
sql_quote() { printf "'%s'" "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e "s/'/''/g")"; }
for db in "${DATABASES[@]}"; do
  $SUDO mariadb -e "CREATE DATABASE IF NOT EXISTS \`$db\`"
  { echo "SET @cdc_password = $(sql_quote "$CDC_PASSWORD"), @cdc_database = $(sql_quote "$db");"
    cat "$HERE/sql/mysql/replication_user.sql"; } | $SUDO mariadb
done
$SUDO mariadb <<SQL
CREATE USER IF NOT EXISTS 'cdcmirror_admin'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'cdcmirror_admin'@'localhost';
ALTER USER 'cdcmirror_admin'@'127.0.0.1' IDENTIFIED BY $(sql_quote "$ADMIN_PASSWORD");
ALTER USER 'cdcmirror_admin'@'localhost' IDENTIFIED BY $(sql_quote "$ADMIN_PASSWORD");
GRANT ALL PRIVILEGES ON *.* TO 'cdcmirror_admin'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'cdcmirror_admin'@'localhost' WITH GRANT OPTION;
SQL
log "MariaDB ready on 127.0.0.1:3306 (binlog_format=ROW)"
