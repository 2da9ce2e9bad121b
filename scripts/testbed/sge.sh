#!/usr/bin/env bash
# Son of Grid Engine 8.1.9 on this host: one qmaster, one execd, cluster queues (our "sites") with
# their slot counts, PE smp. Debian layout (SGE_ROOT=/var/lib/gridengine). Verbs: install start
# stop status env. Root only. Adapted from ../shared/testbed/setup-sge.sh (see its gotchas).
set -euo pipefail
TB_NAME=sge; . "$(dirname "$0")/lib.sh"
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
QUEUES=${SGE_QUEUES:-"siteA:2 siteB:3"}
COMMON=$SGE_ROOT/$SGE_CELL/common
QM_PID=/var/spool/gridengine/qmaster/qmaster.pid
H=$(hostname)
execd_pidfile() { ls /var/spool/gridengine/execd/*/execd.pid 2>/dev/null | head -n 1 || true; }

do_install() {
  debconf-set-selections <<EOT
gridengine-common shared/gridengineconfig boolean true
gridengine-common shared/gridenginecell string $SGE_CELL
gridengine-common shared/gridenginemaster string $H
EOT
  apt_install gridengine-master gridengine-exec gridengine-client
}

init_cluster() {
  if [ ! -e /var/spool/gridengine/spooldb/sge ]; then
    local d
    for d in /var/spool/gridengine/qmaster /var/spool/gridengine/qmaster/job_scripts \
             /var/spool/gridengine/spooldb /var/spool/gridengine/execd "$COMMON"; do
      mkdir -p "$d"; chown sgeadmin:sgeadmin "$d"; chmod 755 "$d"
    done
    [ -e "$COMMON/bootstrap" ] || install -m0644 -o sgeadmin -g sgeadmin /usr/share/gridengine/default-bootstrap "$COMMON/bootstrap"
    su -s /bin/sh -c "/usr/share/gridengine/scripts/init_cluster $SGE_ROOT $SGE_CELL /var/spool/gridengine/spooldb sgeadmin" sgeadmin >/dev/null
  fi
  echo "$H" > "$COMMON/act_qmaster"; chown sgeadmin:sgeadmin "$COMMON/act_qmaster"
  # the host's names must all be one host to SGE (else "client IP resolved to host name localhost")
  getent hosts "$H" >/dev/null || { echo "127.0.1.1 $H" >> /etc/hosts; log "added $H to /etc/hosts"; }
  local ip names n line="$H"
  ip=$(getent hosts "$H" | awk '{print $1; exit}')
  names="$(getent hosts "$ip" | awk '{print $2; exit}') localhost $(hostname -f 2>/dev/null || true)"
  for n in $names; do case " $line " in *" $n "*) ;; *) line="$line $n" ;; esac; done
  echo "$line" > "$COMMON/host_aliases"
}

configure() {
  local d q name slots; d=$(mktemp -d)
  qconf -sh 2>/dev/null | grep -qx "$H" || qconf -ah "$H" >/dev/null
  qconf -ss 2>/dev/null | grep -qx "$H" || qconf -as "$H" >/dev/null
  qconf -sconf global > "$d/global"
  # root's jobs allowed; no login shells (they source profiles); quick accounting flush
  sed -i -e 's/^min_uid .*/min_uid                      0/' -e 's/^min_gid .*/min_gid                      0/' \
         -e 's/^load_report_time .*/load_report_time             00:00:05/' \
         -e 's/^login_shells .*/login_shells                 none/' -e 's/flush_time=[0-9:]*/flush_time=00:00:01/' "$d/global"
  qconf -Mconf "$d/global" >/dev/null
  qconf -ssconf > "$d/sched"
  sed -i -e 's/^schedule_interval .*/schedule_interval                 0:0:1/' \
         -e 's/^flush_submit_sec .*/flush_submit_sec                  1/' -e 's/^flush_finish_sec .*/flush_finish_sec                  1/' "$d/sched"
  qconf -Msconf "$d/sched" >/dev/null
  if ! qconf -spl 2>/dev/null | grep -qx smp; then
    printf '%s\n' "pe_name smp" "slots 9999" "user_lists NONE" "xuser_lists NONE" "start_proc_args NONE" \
      "stop_proc_args NONE" 'allocation_rule $pe_slots' "control_slaves FALSE" "job_is_first_task TRUE" \
      "urgency_slots min" "accounting_summary FALSE" "qsort_args NONE" > "$d/smp"
    qconf -Ap "$d/smp" >/dev/null
  fi
  qconf -sq > "$d/tmpl"
  for q in $QUEUES; do
    name=${q%%:*}.q; slots=${q##*:}
    sed -e "s/^qname .*/qname                 $name/" -e "s/^hostlist .*/hostlist              $H/" \
        -e "s/^load_thresholds .*/load_thresholds       NONE/" -e "s/^pe_list .*/pe_list               smp/" \
        -e "s/^slots .*/slots                 $slots/" -e "s#^shell .*#shell                 /bin/bash#" \
        -e "s/^shell_start_mode .*/shell_start_mode      unix_behavior/" "$d/tmpl" > "$d/$name"
    if qconf -sql 2>/dev/null | grep -qx "$name"; then qconf -Mq "$d/$name" >/dev/null; else qconf -Aq "$d/$name" >/dev/null; fi
  done
  rm -rf "$d"
}

wait_execd() {
  local i first=${QUEUES%%:*}.q
  for i in $(seq 150); do
    qstat -f -q "$first" 2>/dev/null | grep "^$first@" | awk '{print $6}' | grep -qv u && return 0
    sleep 0.2
  done
  log "execd did not report in time"; qstat -f; return 1
}

do_start() {
  local t0 i; t0=$(now)
  if pid_alive "$QM_PID" sge_qmaster && pid_alive "$(execd_pidfile)" sge_execd; then log "already running"; return 0; fi
  init_cluster
  mkdir -p /var/run/gridengine; chown sgeadmin:sgeadmin /var/run/gridengine
  pid_alive "$QM_PID" sge_qmaster || /usr/sbin/sge_qmaster
  for i in $(seq 150); do qstat >/dev/null 2>&1 && break; sleep 0.2; done
  configure
  pid_alive "$(execd_pidfile)" sge_execd || /usr/sbin/sge_execd
  wait_execd
  log "started in $(elapsed "$t0") s: queues $QUEUES"
}

do_stop() { stop_pid "$(execd_pidfile)" sge_execd; stop_pid "$QM_PID" sge_qmaster; }

case "${1:-start}" in
  install) do_install ;;
  start) do_start ;;
  stop) do_stop ;;
  status) pid_alive "$QM_PID" sge_qmaster && qstat -f || echo "sge down" ;;
  env) echo "export SGE_ROOT=$SGE_ROOT SGE_CELL=$SGE_CELL METASCHED_TESTBED_SGE_QUEUES='$(for q in $QUEUES; do printf '%s.q ' "${q%%:*}"; done)'" ;;
  *) echo "usage: $0 install|start|stop|status|env" >&2; exit 2 ;;
esac
