#!/usr/bin/env bash
# SSH test hosts for the remote-site tests (issue 9): real OpenSSH servers on this machine, no traffic leaves it.
#
#   lo   sshd on 127.0.0.1:$SSH_PORT in the root network namespace (the metaqueue's "workstation");
#        with netns also on the veth addresses 10.77.N.1, so test hosts can ssh back to it.
#   msa  a network namespace ("host A") with its own sshd on 10.77.1.2:22, linked by veth ms-a0 <-> ms-a1
#   msb  the same on 10.77.2.2:22 (veth ms-b0 <-> ms-b1)
#
# Cutting a host off: `sshd.sh cut msa` (ip link set ms-a0 down) and `sshd.sh restore msa`.
# Every host lets in one unprivileged account, $SSH_USER (shell /bin/sh, home in $SSH_TESTBED_DIR/home), the
# way a user has "merely an account" on each cluster (seed 003, section 1.1). root may log in with the same
# key (end-to-end tests only: the placeholder agent needs this machine's Python, readable by root alone).
# Keys are throwaway (made here, in $SSH_TESTBED_DIR): a host key and the user key `id_ed25519`, allowed without
# restriction; tests append their own restricted lines to the user's authorized_keys ($SSH_TESTBED_DIR/auth/<user>).
#
# Verbs: all (default: install, start, smoke), install, start, stop, restart, status, smoke, cut NAME, restore NAME, env.
# Every daemon is started by this script and stopped by its own PID file.
set -euo pipefail

SSH_TESTBED_DIR=${SSH_TESTBED_DIR:-/tmp/testbed/ssh}
SSH_PORT=${SSH_PORT:-22022}
SSH_NETNS=${SSH_NETNS:-1}          # 0: loopback host only
SSH_USER=${SSH_USER:-mstest}
HOSTS_NS=(msa msb)

die() { echo "sshd.sh: $*" >&2; exit 1; }

ns_index() { case "$1" in msa) echo 1 ;; msb) echo 2 ;; *) die "unknown host $1 (msa or msb)" ;; esac; }
veth_root() { case "$1" in msa) echo ms-a0 ;; msb) echo ms-b0 ;; esac; }
veth_ns() { case "$1" in msa) echo ms-a1 ;; msb) echo ms-b1 ;; esac; }

install() {
  if [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null || ! command -v ip >/dev/null; then
    [ "$(id -u)" = 0 ] || die "openssh-server is missing and we are not root to install it"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends openssh-server openssh-client iproute2 >/dev/null
  fi
}

account() {
  local home="$SSH_TESTBED_DIR/home/$SSH_USER"
  mkdir -p "$SSH_TESTBED_DIR/home"
  chmod 755 "$SSH_TESTBED_DIR" "$SSH_TESTBED_DIR/home"
  if ! id "$SSH_USER" >/dev/null 2>&1; then
    useradd --system --home-dir "$home" --create-home --shell /bin/sh "$SSH_USER"
  fi
  mkdir -p "$home"
  chown "$SSH_USER:" "$home"
  # '*' = no password, but not "locked" ('!'), which sshd without PAM would refuse even for keys.
  usermod -p '*' "$SSH_USER"
}

keys() {
  mkdir -p "$SSH_TESTBED_DIR/auth"
  chmod 755 "$SSH_TESTBED_DIR" "$SSH_TESTBED_DIR/auth"
  [ -f "$SSH_TESTBED_DIR/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C testbed-host -f "$SSH_TESTBED_DIR/ssh_host_ed25519_key"
  [ -f "$SSH_TESTBED_DIR/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C testbed-user -f "$SSH_TESTBED_DIR/id_ed25519"
  local ak="$SSH_TESTBED_DIR/auth/$SSH_USER"
  if [ ! -f "$ak" ] || ! grep -qF "$(cut -d' ' -f2 "$SSH_TESTBED_DIR/id_ed25519.pub")" "$ak"; then
    cat "$SSH_TESTBED_DIR/id_ed25519.pub" >> "$ak"
  fi
  chown "$SSH_USER:" "$ak"
  chmod 600 "$ak"
  # root may log in with the same key, for the end-to-end tests only: the placeholder agent needs this
  # machine's Python environment, which lives where only root can read it.
  cp "$SSH_TESTBED_DIR/id_ed25519.pub" "$SSH_TESTBED_DIR/auth/root"
  chmod 600 "$SSH_TESTBED_DIR/auth/root"
  # The project's own known_hosts: every test host presents the same throwaway host key.
  local pub; pub=$(cut -d' ' -f1,2 "$SSH_TESTBED_DIR/ssh_host_ed25519_key.pub")
  {
    echo "[127.0.0.1]:$SSH_PORT $pub"
    echo "10.77.1.2 $pub"
    echo "10.77.2.2 $pub"
    echo "[10.77.1.1]:$SSH_PORT $pub"
    echo "[10.77.2.1]:$SSH_PORT $pub"
  } > "$SSH_TESTBED_DIR/known_hosts"
  # A client configuration for the test user: ProxyJump legs read only -F, not the command line's -i/-o.
  cat > "$SSH_TESTBED_DIR/ssh_config" <<EOF
Host *
  User $SSH_USER
  IdentityFile $SSH_TESTBED_DIR/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $SSH_TESTBED_DIR/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
EOF
}

config() {  # name listen...
  local name=$1; shift
  local cfg="$SSH_TESTBED_DIR/sshd-$name.conf"
  {
    for addr in "$@"; do echo "ListenAddress $addr"; done
    cat <<EOF
HostKey $SSH_TESTBED_DIR/ssh_host_ed25519_key
PidFile $SSH_TESTBED_DIR/sshd-$name.pid
AuthorizedKeysFile $SSH_TESTBED_DIR/auth/%u
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
AcceptEnv SLURM_CONF SGE_ROOT SGE_CELL
StrictModes no
AllowTcpForwarding yes
AllowStreamLocalForwarding no
X11Forwarding no
PermitTunnel no
MaxSessions 200
MaxStartups 200:30:400
PermitUserEnvironment no
ClientAliveInterval 5
ClientAliveCountMax 3
LogLevel ERROR
Subsystem sftp internal-sftp
EOF
  } > "$cfg"
  echo "$cfg"
}

running() {  # name
  local pidf="$SSH_TESTBED_DIR/sshd-$1.pid"
  [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null
}

netns_up() {  # name
  local name=$1 i; i=$(ns_index "$name")
  local r; r=$(veth_root "$name"); local n; n=$(veth_ns "$name")
  ip netns list | grep -qw "$name" || ip netns add "$name"
  ip -n "$name" link set lo up
  if ! ip link show "$r" >/dev/null 2>&1; then
    ip link add "$r" type veth peer name "$n"
    ip link set "$n" netns "$name"
  fi
  ip addr replace "10.77.$i.1/30" dev "$r"
  ip link set "$r" up
  ip -n "$name" addr replace "10.77.$i.2/30" dev "$n"
  ip -n "$name" link set "$n" up
}

start() {
  [ "$(id -u)" = 0 ] || die "must be root (network namespaces, sshd on a privileged setup)"
  install
  account
  keys
  mkdir -p /run/sshd
  local root_listen=("127.0.0.1:$SSH_PORT")
  if [ "$SSH_NETNS" = 1 ]; then
    for h in "${HOSTS_NS[@]}"; do
      netns_up "$h"
      root_listen+=("10.77.$(ns_index "$h").1:$SSH_PORT")
    done
  fi
  if ! running lo; then
    /usr/sbin/sshd -f "$(config lo "${root_listen[@]}")" -E "$SSH_TESTBED_DIR/sshd-lo.log"
  fi
  if [ "$SSH_NETNS" = 1 ]; then
    for h in "${HOSTS_NS[@]}"; do
      if ! running "$h"; then
        ip netns exec "$h" /usr/sbin/sshd -f "$(config "$h" "10.77.$(ns_index "$h").2:22")" -E "$SSH_TESTBED_DIR/sshd-$h.log"
      fi
    done
  fi
  for _ in $(seq 50); do
    running lo && { [ "$SSH_NETNS" != 1 ] || { running msa && running msb; }; } && break
    sleep 0.1
  done
  write_hosts
}

write_hosts() {
  local ns_json=""
  if [ "$SSH_NETNS" = 1 ]; then
    ns_json=', "msa": {"host": "10.77.1.2", "port": 22, "back": "10.77.1.1", "veth": "ms-a0"}, "msb": {"host": "10.77.2.2", "port": 22, "back": "10.77.2.1", "veth": "ms-b0"}'
  fi
  cat > "$SSH_TESTBED_DIR/hosts.json" <<EOF
{"dir": "$SSH_TESTBED_DIR", "user": "$SSH_USER", "home": "$SSH_TESTBED_DIR/home/$SSH_USER", "key": "$SSH_TESTBED_DIR/id_ed25519",
 "known_hosts": "$SSH_TESTBED_DIR/known_hosts", "ssh_config": "$SSH_TESTBED_DIR/ssh_config", "port": $SSH_PORT,
 "hosts": {"lo": {"host": "127.0.0.1", "port": $SSH_PORT}$ns_json}}
EOF
}

stop() {
  for name in lo "${HOSTS_NS[@]}"; do
    local pidf="$SSH_TESTBED_DIR/sshd-$name.pid"
    if [ -f "$pidf" ]; then
      kill "$(cat "$pidf")" 2>/dev/null || true
      rm -f "$pidf"
    fi
  done
  for h in "${HOSTS_NS[@]}"; do
    ip link del "$(veth_root "$h")" 2>/dev/null || true
    ip netns del "$h" 2>/dev/null || true
  done
}

ssh_to() {  # host-ip port command...
  local host=$1 port=$2; shift 2
  ssh -F /dev/null -o BatchMode=yes -o UserKnownHostsFile="$SSH_TESTBED_DIR/known_hosts" -o StrictHostKeyChecking=yes \
      -o ConnectTimeout=5 -i "$SSH_TESTBED_DIR/id_ed25519" -p "$port" "$SSH_USER@$host" "$@"
}

smoke() {
  ssh_to 127.0.0.1 "$SSH_PORT" true
  if [ "$SSH_NETNS" = 1 ]; then
    ssh_to 10.77.1.2 22 'ip -o -4 addr show ms-a1' | grep -q 10.77.1.2
    ssh_to 10.77.2.2 22 'ip -o -4 addr show ms-b1' | grep -q 10.77.2.2
  fi
  echo "sshd.sh: smoke ok"
}

status() {
  for name in lo "${HOSTS_NS[@]}"; do
    if running "$name"; then echo "$name: running (pid $(cat "$SSH_TESTBED_DIR/sshd-$name.pid"))"; else echo "$name: stopped"; fi
  done
}

case "${1:-all}" in
  all) install; start; smoke ;;
  install) install ;;
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status) status ;;
  smoke) smoke ;;
  cut) ip link set "$(veth_root "${2:?host}")" down ;;
  restore) ip link set "$(veth_root "${2:?host}")" up ;;
  env) echo "export METASCHED_SSH_TESTBED=$SSH_TESTBED_DIR/hosts.json" ;;
  *) die "unknown verb $1" ;;
esac
