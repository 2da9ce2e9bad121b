#!/usr/bin/env bash
# Throwaway PostgreSQL 15 on 127.0.0.1:$PG_PORT (trust auth, durability off: tests only).
# Verbs: install start stop status env. Root only. Adapted from ../shared/testbed/setup-postgres.sh.
set -euo pipefail
TB_NAME=postgres; . "$(dirname "$0")/lib.sh"
BASE=${PG_BASE:-/tmp/metasched-testbed/pg}
PGPORT=${PG_PORT:-55432}
BIN=/usr/lib/postgresql/15/bin
DATA=$BASE/data
as_pg() { runuser -u postgres -- "$@"; }
pg_pid() { head -n 1 "$DATA/postmaster.pid" 2>/dev/null || true; }
running() { local p; p=$(pg_pid); [ -n "$p" ] && [ "$(ps -o comm= -p "$p" 2>/dev/null)" = postgres ]; }

do_start() {
  local t0; t0=$(now)
  if running; then log "already running on 127.0.0.1:$PGPORT"; return 0; fi
  mkdir -p "$BASE/run"; chown postgres:postgres "$BASE" "$BASE/run"
  if [ ! -s "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA"; as_pg "$BIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null
  fi
  rm -f "$DATA/postmaster.pid"
  as_pg "$BIN/pg_ctl" -D "$DATA" -l "$BASE/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $BASE/run -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null
  "$BIN/pg_isready" -h 127.0.0.1 -p "$PGPORT" -t 30 >/dev/null
  log "started in $(elapsed "$t0") s on 127.0.0.1:$PGPORT"
}

do_stop() { running || return 0; as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null; }

case "${1:-start}" in
  install) [ -x "$BIN/pg_ctl" ] || apt_install postgresql-15 postgresql-client ;;
  start) do_start ;;
  stop) do_stop ;;
  status) running && echo "postgres on 127.0.0.1:$PGPORT" || echo "postgres down" ;;
  env) echo "export METASCHED_TEST_PG_URL=postgresql://postgres@127.0.0.1:$PGPORT/postgres" ;;
  *) echo "usage: $0 install|start|stop|status|env" >&2; exit 2 ;;
esac
