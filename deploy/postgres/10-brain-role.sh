#!/bin/sh
# Creates the role brain runs as: it owns brain's database but is no superuser
# and has no BYPASSRLS, so PostgreSQL's row-level security (the second tenant
# wall, migrations/postgres/0005_row_security.sql) binds every query it makes.
# The postgres image runs this once, when its data volume is first initialized.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v role="$DB_APP_USER" -v pw="$DB_APP_PASSWORD" -v db="$DB_APP_NAME" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'role')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role')\gexec
ALTER ROLE :"role" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD :'pw';
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'role')
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db')\gexec
ALTER DATABASE :"db" OWNER TO :"role";
SQL
