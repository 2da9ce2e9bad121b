# Shared helpers of the testbed scripts (sourced). Daemons are only ever stopped by the PID in
# their own pidfile, after checking the PID still runs the program we expect.
log() { printf '[testbed %s %s] %s\n' "${TB_NAME:-}" "$(date +%T)" "$*"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
read_pid() { cat "$1" 2>/dev/null || true; }
live() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1; [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
pid_alive() { local p; p=$(read_pid "$1"); [ -n "$p" ] && live "$p" && [ "$(ps -o comm= -p "$p" 2>/dev/null)" = "$2" ]; }
stop_pid() { # pidfile comm
  local p i; pid_alive "$1" "$2" || return 0
  p=$(read_pid "$1"); log "stopping $2 pid $p"; kill "$p" 2>/dev/null || true
  for i in $(seq 100); do live "$p" || break; sleep 0.2; done
  if live "$p"; then log "$2 pid $p ignored TERM, sending KILL"; kill -9 "$p" 2>/dev/null || true; fi
}
apt_install() { # packages... (only the missing ones; keeps apt from starting daemons)
  local missing="" p made=0
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"; done
  [ -z "$missing" ] && return 0
  if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; made=1; fi
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  [ "$made" = 1 ] && rm -f /usr/sbin/policy-rc.d
  log "installed:$missing"
}
