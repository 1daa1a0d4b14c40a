#!/bin/sh
# The official postgres image's entrypoint, reduced to what brain's compose
# file relies on: on an empty $PGDATA, initdb with POSTGRES_USER and
# POSTGRES_PASSWORD (scram-sha-256 for connections from the network), run
# /docker-entrypoint-initdb.d/*.sh and *.sql against a server that listens on
# its socket only, stop it; then run PostgreSQL as the postgres user.
set -eu
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA"
chown postgres:postgres "$PGDATA"
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" > "$pwfile"
  chown postgres "$pwfile"
  as_pg initdb -D "$PGDATA" --username="${POSTGRES_USER:-postgres}" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  printf "listen_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  as_pg pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  export PGUSER="${POSTGRES_USER:-postgres}"
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "running $f"; as_pg sh "$f" ;;
      *.sql) echo "running $f"; as_pg psql -v ON_ERROR_STOP=1 -q -f "$f" ;;
    esac
  done
  as_pg pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "PostgreSQL init process complete; ready for start up."
fi
if [ "${1:-}" = postgres ]; then
  shift
  exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" "$@"
fi
exec "$@"
