"""Run a site's commands over SSH: OpenSSH's client, one multiplexed master connection per site.

Seed 003, sections 1.1 and 3: the user has nothing but an account on each cluster, so the
metaqueue reaches every site with Secure Shell and Secure Copy, and nothing is installed there by an
administrator. We drive OpenSSH's own ``ssh``/``scp`` rather than a Python SSH library because the
user's clusters are already set up for it: their ``~/.ssh/config``, agent, ProxyJump chains,
Kerberos/GSSAPI and known_hosts all keep working, and ControlMaster gives connection reuse for free.

How a command runs: :meth:`SshRunner.connect` starts one master (``ssh -M -N -f`` with
``ControlPersist``) whose control socket lives in a private 0700 directory; every command is then
``ssh -o ControlMaster=no -o ControlPath=<socket> host -- <command>``, a new channel on the
master's TCP connection (a few milliseconds, no key exchange). File copies use ``scp`` over the same
socket. ``BatchMode=yes`` everywhere: a prompt for a password or a host key would hang the
metaqueue, so it fails fast instead.

Reachability (see :mod:`metasched.runtime.remote.health`): a failed connection, an SSH-level error
(exit 255) or a command timeout marks the site down and tears the master down (a master on a cut
link would otherwise stall every later command until its keep-alives give up); until the back-off
expires every call raises :class:`SiteUnreachable` at once. Commands are never re-run
automatically: ``sbatch`` is not idempotent, so retrying is the site manager's decision.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from metasched.runtime.remote.health import Backoff, SiteHealth, SiteState
from metasched.runtime.remote.runner import (
    DEFAULT_TIMEOUT_S,
    Command,
    CommandFailed,
    CommandResult,
    CommandTimeout,
    SiteUnreachable,
    display,
    execute,
)

HostKeyPolicy = Literal["yes", "accept-new", "no"]
_HOST_KEY_POLICIES: tuple[str, ...] = ("yes", "accept-new", "no")
#: ssh's own exit status for its errors (connection, authentication, protocol); a remote command's
#: status is passed through unchanged otherwise.
SSH_ERROR = 255
# sun_path is 108 bytes on Linux; ssh appends a random suffix while it binds the socket.
_MAX_SOCKET_PATH = 80
_SAFE_OPTION = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


@dataclass(frozen=True, slots=True)
class SshTarget:
    """Where a site is: SSH destination and how to authenticate and verify it.

    ``jump`` is an OpenSSH ProxyJump spec (``[user@]host[:port]``, comma-separated for a chain); the
    jump leg is a separate ``ssh`` that reads only the configuration file (``-F``), not our ``-i``/``-o``
    options, so its key and known_hosts must come from there (the user's ``~/.ssh/config`` by default).
    ``known_hosts`` is the project's own known_hosts file (None = the user's). ``host_key_policy``
    is StrictHostKeyChecking: ``yes`` (the key must already be known), ``accept-new`` (learn a new
    host's key once, refuse a changed one; the default) or ``no`` (tests only).
    ``ssh_config`` is passed as ``-F`` (``/dev/null`` ignores the user's configuration).
    """

    host: str
    user: str | None = None
    port: int | None = None
    identity_file: Path | None = None
    jump: str | None = None
    known_hosts: Path | None = None
    host_key_policy: HostKeyPolicy = "accept-new"
    ssh_config: str | None = None
    connect_timeout_s: float = 10.0
    keepalive_s: int = 5
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.host or self.host.startswith("-") or any(c.isspace() for c in self.host):
            raise ValueError(f"ssh: bad host {self.host!r}")
        if self.user is not None and (not self.user or self.user.startswith("-") or "@" in self.user):
            raise ValueError(f"ssh: bad user {self.user!r}")
        if self.port is not None and not 0 < self.port < 65536:
            raise ValueError(f"ssh: port must be in 1..65535, got {self.port}")
        if self.host_key_policy not in _HOST_KEY_POLICIES:
            raise ValueError(f"ssh: host_key_policy must be one of {_HOST_KEY_POLICIES}, got {self.host_key_policy!r}")
        if self.connect_timeout_s <= 0:
            raise ValueError(f"ssh: connect_timeout_s must be positive, got {self.connect_timeout_s}")
        for name in self.options:
            if not _SAFE_OPTION.match(name):
                raise ValueError(f"ssh: bad option name {name!r}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, base_dir: Path | None = None) -> SshTarget:
        """Build from a site configuration's ``ssh:`` mapping (keys: host, user, port, key, jump,
        known_hosts, host_key_policy, ssh_config, connect_timeout_s, keepalive_s, options).

        Relative paths are resolved against ``base_dir`` (the configuration file's folder).
        """
        known = {
            "host",
            "user",
            "port",
            "key",
            "jump",
            "known_hosts",
            "host_key_policy",
            "ssh_config",
            "connect_timeout_s",
            "keepalive_s",
            "options",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"ssh: unknown key(s) {unknown}; allowed: {sorted(known)}")
        if "host" not in data:
            raise ValueError("ssh: 'host' is required")

        def path(value: Any) -> Path | None:
            if value is None:
                return None
            p = Path(str(value)).expanduser()
            return p if p.is_absolute() or base_dir is None else base_dir / p

        port = data.get("port")
        if port is not None and not isinstance(port, int):
            raise ValueError(f"ssh: port must be an integer, got {port!r}")
        options = data.get("options") or {}
        if not isinstance(options, Mapping):
            raise ValueError(f"ssh: options must be a mapping, got {options!r}")
        return cls(
            host=str(data["host"]),
            user=None if data.get("user") is None else str(data["user"]),
            port=port,
            identity_file=path(data.get("key")),
            jump=None if data.get("jump") is None else str(data["jump"]),
            known_hosts=path(data.get("known_hosts")),
            host_key_policy=data.get("host_key_policy", "accept-new"),
            ssh_config=None if data.get("ssh_config") is None else str(data["ssh_config"]),
            connect_timeout_s=float(data.get("connect_timeout_s", 10.0)),
            keepalive_s=int(data.get("keepalive_s", 5)),
            options={str(k): str(v) for k, v in options.items()},
        )

    @property
    def destination(self) -> str:
        """``user@host`` or ``host``."""
        return f"{self.user}@{self.host}" if self.user else self.host

    @property
    def label(self) -> str:
        """``user@host:port`` for logs."""
        return self.destination + (f":{self.port}" if self.port else "")

    def options_argv(self) -> list[str]:
        """The ``-o``/``-F``/``-i``/``-J`` options common to ssh and scp (no port: they spell it differently)."""
        argv: list[str] = []
        if self.ssh_config is not None:
            argv += ["-F", self.ssh_config]
        opts: dict[str, str] = {
            "BatchMode": "yes",
            "ConnectTimeout": str(max(1, round(self.connect_timeout_s))),
            "ServerAliveInterval": str(self.keepalive_s),
            "ServerAliveCountMax": "3",
            "StrictHostKeyChecking": self.host_key_policy,
            "LogLevel": "ERROR",
        }
        if self.known_hosts is not None:
            opts["UserKnownHostsFile"] = str(self.known_hosts)
            opts["GlobalKnownHostsFile"] = "/dev/null"
        if self.identity_file is not None:
            opts["IdentitiesOnly"] = "yes"
            argv += ["-i", str(self.identity_file)]
        if self.jump is not None:
            argv += ["-J", self.jump]
        opts.update(self.options)
        for name, value in opts.items():
            argv += ["-o", f"{name}={value}"]
        return argv


class SshRunner:
    """A :class:`~metasched.runtime.remote.runner.CommandRunner` for one site over one OpenSSH master.

    ``control_dir`` holds the control socket (a private 0700 directory made here when not given;
    unix socket paths are limited to ~100 bytes, so keep it short). ``persist_s`` is the master's
    ``ControlPersist`` idle time. ``clock`` is the monotonic clock of the health record.
    """

    def __init__(
        self,
        target: SshTarget,
        *,
        control_dir: Path | None = None,
        persist_s: int = 600,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        ssh: str = "ssh",
        scp: str = "scp",
    ) -> None:
        self.ssh_target = target
        self.health = SiteHealth(backoff=backoff or Backoff())
        self._clock = clock
        self._ssh = ssh
        self._scp = scp
        self._persist_s = persist_s
        self._own_dir = control_dir is None
        if control_dir is None:
            control_dir = Path(tempfile.mkdtemp(prefix="msssh-"))
        control_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(control_dir, 0o700)
        self._dir = control_dir
        digest = hashlib.sha1(f"{target.label}|{target.jump}".encode()).hexdigest()[:12]
        self.control_path = control_dir / f"{digest}.sock"
        if len(os.fsencode(self.control_path)) > _MAX_SOCKET_PATH:
            raise ValueError(
                f"ssh: control socket path {self.control_path} is longer than {_MAX_SOCKET_PATH} bytes "
                "(unix socket limit); pass a shorter control_dir"
            )
        self._log = control_dir / f"{digest}.log"
        # Reverse tunnels live on the master: a new master starts with none, so we remember them.
        self._forwards: set[tuple[str, int, int]] = set()
        self._applied: set[tuple[str, int, int]] = set()
        # Commands may run from several threads (a burst of submissions): one of them starts the master.
        self._lock = threading.RLock()

    # -- CommandRunner -----------------------------------------------------------------------

    @property
    def target(self) -> str:
        return self.ssh_target.label

    def run(
        self,
        command: Command,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        input: str | None = None,
        check: bool = False,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        """Run ``command`` on the site (argv words are shell-quoted; a string goes to the remote shell as is).

        ``env`` is exported on the remote side (``env K=V ... command``), since sshd drops most
        client variables.
        """
        shown = display(command)
        if not shown.strip():
            raise ValueError("empty command")
        remote = shown
        if env:
            for key in env:
                if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
                    raise ValueError(f"bad environment variable name {key!r}")
            assignments = " ".join(f"{k}={_quote(v)}" for k, v in env.items())
            remote = f"env {assignments} /bin/sh -c {_quote(shown)}"
        self.connect()
        argv = [self._ssh, *self._mux_argv(), *self._port_argv("-p"), self.ssh_target.destination, "--", remote]
        result = self._guarded(argv, timeout_s=timeout_s, input=input, shown=shown)
        if check and not result.ok:
            raise CommandFailed(self.target, result)
        return result

    def put(self, local: Path, remote: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        """``scp`` a local file or directory to ``remote`` on the site, over the master."""
        local = Path(local)
        if not local.exists():
            raise FileNotFoundError(f"no such file or directory: {local}")
        self._copy([str(local), f"{self._scp_host()}:{remote}"], recursive=local.is_dir(), timeout_s=timeout_s)

    def get(self, remote: str, local: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        """``scp`` ``remote`` (file or directory) from the site to ``local``, over the master."""
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        self._copy([f"{self._scp_host()}:{remote}", str(local)], recursive=True, timeout_s=timeout_s)

    def close(self) -> None:
        """Stop the master (``ssh -O exit``); the next command reconnects."""
        if self.control_path.exists():
            with contextlib.suppress(Exception):
                execute(
                    [self._ssh, *self._mux_argv(), "-O", "exit", self.ssh_target.destination],
                    timeout_s=5,
                    input=None,
                    target=self.target,
                    shown="ssh -O exit",
                )
            with contextlib.suppress(FileNotFoundError):
                self.control_path.unlink()

    def dispose(self) -> None:
        """:meth:`close`, and remove the control directory if this runner made it."""
        self.close()
        if self._own_dir:
            shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> SshRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    # -- connection ----------------------------------------------------------------------------

    def is_connected(self) -> bool:
        """Whether a live master answers on the control socket (``ssh -O check``)."""
        if not self.control_path.exists():
            return False
        try:
            res = execute(
                [self._ssh, *self._mux_argv(), "-O", "check", self.ssh_target.destination],
                timeout_s=5,
                input=None,
                target=self.target,
                shown="ssh -O check",
            )
        except CommandTimeout:
            return False
        return res.ok

    def connect(self) -> None:
        """Make sure a master is up; start one if not. Raises :class:`SiteUnreachable` on failure or in back-off.

        The control socket only appears once the master has authenticated, so its presence is the
        cheap test; a stale socket (master killed) makes the next command fail with exit 255,
        which tears it down.
        """
        with self._lock:
            self._connect()

    def _connect(self) -> None:
        now = self._clock()
        if not self.health.may_try(now):
            raise SiteUnreachable(
                self.target,
                "connect",
                f"site is down (last error: {self.health.last_error}); "
                f"next retry in {(self.health.next_retry_at or now) - now:.1f} s",
            )
        if self.control_path.exists():
            return
        t = self.ssh_target
        argv = [
            self._ssh,
            *t.options_argv(),
            *self._port_argv("-p"),
            "-o",
            "ControlMaster=yes",
            "-o",
            f"ControlPath={self.control_path}",
            "-o",
            f"ControlPersist={self._persist_s}",
            "-N",
            "-f",
            t.destination,
        ]
        # ``-f`` forks the master into the background after authentication: it must not inherit
        # our pipes (we would wait for their EOF until it exits), so its stderr goes to a log file.
        with open(self._log, "ab") as log:
            try:
                proc = subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    timeout=t.connect_timeout_s + 5,
                    check=False,
                    start_new_session=True,
                )
                rc: int | None = proc.returncode
            except subprocess.TimeoutExpired:
                rc = None
        if rc == 0 and self.control_path.exists():
            self.health.record_ok(self._clock())
            self._applied.clear()
            return
        error = self._last_log_line() or ("connect timed out" if rc is None else f"ssh exit {rc}")
        self._fail(error)
        raise SiteUnreachable(self.target, "connect", error)

    def forward_remote(self, remote_port: int, local_port: int, *, remote_bind: str = "127.0.0.1") -> None:
        """Reverse tunnel on the master (``ssh -O forward -R``): ``remote_bind:remote_port`` on the site
        reaches ``127.0.0.1:local_port`` here. For sites whose nodes can reach nothing outside."""
        self._forward("forward", remote_port, local_port, remote_bind)

    def cancel_remote(self, remote_port: int, local_port: int, *, remote_bind: str = "127.0.0.1") -> None:
        """Remove a reverse tunnel made by :meth:`forward_remote` or :meth:`keep_remote_forward`."""
        self._forwards.discard((remote_bind, remote_port, local_port))
        self._forward("cancel", remote_port, local_port, remote_bind)
        self._applied.discard((remote_bind, remote_port, local_port))

    def keep_remote_forward(self, remote_port: int, local_port: int, *, remote_bind: str = "127.0.0.1") -> None:
        """A reverse tunnel that outlives reconnections: opened now if the current master lacks it.

        Call it before each round of work on the site (cheap when the tunnel is already there).
        """
        key = (remote_bind, remote_port, local_port)
        self._forwards.add(key)
        self.connect()
        if key not in self._applied:
            self._forward("forward", remote_port, local_port, remote_bind)
            self._applied.add(key)

    # -- internals -----------------------------------------------------------------------------

    def _forward(self, op: str, remote_port: int, local_port: int, remote_bind: str) -> None:
        self.connect()
        spec = f"{remote_bind}:{remote_port}:127.0.0.1:{local_port}"
        argv = [self._ssh, *self._mux_argv(), "-O", op, "-R", spec, self.ssh_target.destination]
        # A refused forward (port taken, forbidden by the server) is not an outage: no health change.
        result = execute(argv, timeout_s=10, input=None, target=self.target, shown=f"ssh -O {op} -R {spec}")
        if not result.ok:
            raise CommandFailed(self.target, result)

    def _mux_argv(self) -> list[str]:
        return [
            *self.ssh_target.options_argv(),
            "-o",
            "ControlMaster=no",
            "-o",
            f"ControlPath={self.control_path}",
        ]

    def _port_argv(self, flag: str) -> list[str]:
        return [flag, str(self.ssh_target.port)] if self.ssh_target.port else []

    def _scp_host(self) -> str:
        host = self.ssh_target.host
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        return f"{self.ssh_target.user}@{host}" if self.ssh_target.user else host

    def _copy(self, paths: Sequence[str], *, recursive: bool, timeout_s: float) -> None:
        self.connect()
        argv = [self._scp, "-q", "-p", *(["-r"] if recursive else []), *self._mux_argv(), *self._port_argv("-P")]
        argv += list(paths)
        shown = "scp " + " ".join(paths)
        result = self._guarded(argv, timeout_s=timeout_s, input=None, shown=shown)
        if not result.ok:
            raise CommandFailed(self.target, result)

    def _guarded(self, argv: Sequence[str], *, timeout_s: float, input: str | None, shown: str) -> CommandResult:
        """Run one client process; keep the health record and the master in step with what happened."""
        try:
            result = execute(argv, timeout_s=timeout_s, input=input, target=self.target, shown=shown)
        except CommandTimeout as exc:
            # Either the command is slow or the link is dead; both mean the site did not answer in time.
            self._fail(str(exc))
            raise
        if result.returncode == SSH_ERROR and _looks_like_ssh_error(result.stderr):
            error = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "ssh exit 255"
            self._fail(error)
            raise SiteUnreachable(self.target, shown, error)
        self.health.record_ok(self._clock())
        return result

    def _fail(self, error: str) -> None:
        with self._lock:
            self.health.record_failure(self._clock(), error)
            self._drop_master()

    def _drop_master(self) -> None:
        """Forget the master: ask it to exit, without waiting on a dead link, and unlink its socket."""
        if self.control_path.exists():
            with contextlib.suppress(Exception):
                execute(
                    [self._ssh, *self._mux_argv(), "-O", "exit", self.ssh_target.destination],
                    timeout_s=3,
                    input=None,
                    target=self.target,
                    shown="ssh -O exit",
                )
            with contextlib.suppress(FileNotFoundError):
                self.control_path.unlink()

    def _last_log_line(self) -> str:
        try:
            lines = [ln.strip() for ln in self._log.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1] if lines else ""

    @property
    def state(self) -> SiteState:
        """The site's reachability as last observed."""
        return self.health.state


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)


_SSH_ERROR_MARKERS = (
    "ssh:",
    "connection",
    "permission denied",
    "host key",
    "control socket",
    "mux_client",
    "broken pipe",
    "timed out",
    "no route",
    "could not resolve",
    "kex_exchange",
    "port forwarding failed",
)


def _looks_like_ssh_error(stderr: str) -> bool:
    """Whether exit 255 came from ssh itself rather than from the remote command (which may exit 255 too)."""
    low = stderr.lower()
    return any(marker in low for marker in _SSH_ERROR_MARKERS)
