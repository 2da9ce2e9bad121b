#!/usr/bin/env bash
# Slurm 22.05 on this host: partitions (our "sites") on fake nodes, one slurmd per node on
# 127.0.0.1, a private munged. Verbs: install start stop status env. Root only.
# Adapted from ../shared/testbed/setup-slurm.sh (no smoke test: tests/runtime is the smoke test).
set -euo pipefail
TB_NAME=slurm; . "$(dirname "$0")/lib.sh"
BASE=${SLURM_BASE:-/tmp/metasched-testbed/slurm}
CTLD_PORT=${SLURM_CTLD_PORT:-6817}
NODE_PORT0=${SLURM_NODE_PORT0:-17001}
SITES=${SLURM_SITES:-"siteA:1 siteB:2"}   # partition:nodes
CPUS=${SLURM_NODE_CPUS:-2}
export SLURM_CONF=$BASE/etc/slurm.conf
MUNGE_SOCK=$BASE/munge/munge.socket

node_names() { local t=0 s; for s in $SITES; do t=$((t + ${s##*:})); done; seq -f 'n%g' 1 "$t" | tr '\n' ' '; }

write_config() {
  mkdir -p "$BASE"/{etc,state,spool,log,run,munge,jobs}
  [ -s "$BASE/munge/munge.key" ] || mungekey --create --keyfile="$BASE/munge/munge.key" 2>/dev/null \
    || dd if=/dev/urandom of="$BASE/munge/munge.key" bs=1 count=1024 status=none
  chown -R munge:munge "$BASE/munge"; chmod 0755 "$BASE/munge"; chmod 0400 "$BASE/munge/munge.key"; chmod 1777 "$BASE/jobs"
  local nodes="" parts="" i=1 s name cnt first=YES list k
  for s in $SITES; do
    name=${s%%:*}; cnt=${s##*:}; list=""
    for k in $(seq "$cnt"); do
      nodes+="NodeName=n$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((NODE_PORT0 + i - 1)) CPUs=$CPUS RealMemory=2000 State=UNKNOWN"$'\n'
      list+="${list:+,}n$i"; i=$((i + 1))
    done
    parts+="PartitionName=$name Nodes=$list Default=$first MaxTime=INFINITE State=UP OverSubscribe=NO"$'\n'; first=NO
  done
  cat > "$SLURM_CONF.new" <<CONF
ClusterName=metasched
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
ReturnToService=2
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd-%n.pid
SlurmdSpoolDir=$BASE/spool/%n
StateSaveLocation=$BASE/state
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd-%n.log
SchedulerType=sched/backfill
# without batch_sched_delay=0 every job waits ~3 s before it may start
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$BASE/log/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
MinJobAge=3600
InactiveLimit=0
KillWait=2
SlurmdTimeout=30
$nodes$parts
CONF
  mv "$SLURM_CONF.new" "$SLURM_CONF"
  for k in $(node_names); do mkdir -p "$BASE/spool/$k"; done
}

wait_ready() { # epoch timeout nodes...
  local since=$1 t=$2 i n line st bad; shift 2
  for i in $(seq $((t * 5))); do
    bad=0
    for n in "$@"; do
      line=$(scontrol -o show node "$n" 2>/dev/null) || { bad=1; break; }
      case "$line" in *" State=IDLE "*|*" State=MIXED "*|*" State=ALLOCATED "*) ;; *) bad=1; break ;; esac
      st=$(echo "$line" | grep -o 'SlurmdStartTime=[^ ]*' | cut -d= -f2)
      if [ -z "$st" ] || [ "$st" = None ] || [ "$(date -d "$st" +%s)" -lt "$since" ]; then bad=1; break; fi
    done
    [ "$bad" = 0 ] && return 0
    sleep 0.2
  done
  log "nodes not ready after ${t}s"; sinfo -N -l 2>&1 || true; return 1
}

do_start() {
  local t0 n all=1; t0=$(now)
  if pid_alive "$BASE/run/munged.pid" munged && pid_alive "$BASE/run/slurmctld.pid" slurmctld; then
    for n in $(node_names); do pid_alive "$BASE/run/slurmd-$n.pid" slurmd || all=0; done
    if [ "$all" = 1 ]; then log "already running"; return 0; fi
  fi
  write_config
  if ! pid_alive "$BASE/run/munged.pid" munged; then
    rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
    runuser -u munge -- /usr/sbin/munged --socket="$MUNGE_SOCK" --key-file="$BASE/munge/munge.key" \
      --pid-file="$BASE/munge/munged.pid" --log-file="$BASE/munge/munged.log" --seed-file="$BASE/munge/munged.seed"
    ln -sf "$BASE/munge/munged.pid" "$BASE/run/munged.pid"
  fi
  pid_alive "$BASE/run/slurmctld.pid" slurmctld || /usr/sbin/slurmctld -f "$SLURM_CONF"
  local since started=(); since=$(date +%s)
  for n in $(node_names); do
    pid_alive "$BASE/run/slurmd-$n.pid" slurmd && continue
    /usr/sbin/slurmd -f "$SLURM_CONF" -N "$n"; started+=("$n")
  done
  [ "${#started[@]}" = 0 ] || wait_ready "$since" 60 "${started[@]}"
  log "started in $(elapsed "$t0") s: partitions $SITES"
}

do_stop() {
  local f; for f in "$BASE"/run/slurmd-*.pid; do [ -e "$f" ] && stop_pid "$f" slurmd; done
  stop_pid "$BASE/run/slurmctld.pid" slurmctld
  stop_pid "$BASE/munge/munged.pid" munged; rm -f "$BASE/run/munged.pid"
}

case "${1:-start}" in
  install) apt_install slurm-wlm slurmctld slurmd slurm-client munge ;;
  start) do_start ;;
  stop) do_stop ;;
  status) pid_alive "$BASE/run/slurmctld.pid" slurmctld && sinfo || echo "slurm down" ;;
  env) echo "export SLURM_CONF=$SLURM_CONF METASCHED_TESTBED_SLURM_PARTITIONS='$(for s in $SITES; do printf '%s ' "${s%%:*}"; done)'" ;;
  *) echo "usage: $0 install|start|stop|status|env" >&2; exit 2 ;;
esac
