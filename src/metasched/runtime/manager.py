"""The site manager (``metasched sites run``): keeps placeholders in each site's queue.

Per site and per tick: poll the placeholders' batch states (one site failing does not stop the
others); when a placeholder has started, let the throttle (Trellis: queue wait -> increase /
maintain / reduce) move the site's target count, within ``[lower, limit]``; when the metaqueue has
had no ready work for ``idle_cancel_s``, cancel placeholders still queued instead of letting them
start empty; submit placeholders up to the target while there is ready work, which also replaces
placeholders that vanished. Leases are expired every tick too, so no server is needed.

A placeholder that runs out of work *lingers* for the site's ``linger`` (idle, woken at once by new work)
before it leaves, so that a job submitted a moment later starts without a new placeholder's start-up.
Default: 60 s on the ``local`` adapter, where an idle placeholder costs one process; 0 on Slurm, Grid Engine
and PBS, where it would hold an allocation (nodes, the user's quota) doing nothing. An idle placeholder
counts as capacity: no placeholder is submitted for ready jobs the idle ones will take (see
:func:`idle_takes`), more are when the ready work is more than they take. ``--until-idle`` and a stopped
manager (SIGTERM, Ctrl-C) cancel the lingering placeholders with the others.

Sites come from a TOML file::

    [sites.clusterA]
    adapter = "slurm"          # local | slurm | gridengine | pbs
    queue = "short"            # partition or queue
    cpus = 1                   # per placeholder
    wall_time = "30m"
    limit = 8                  # never more placeholders than this
    initial = 2
    increase_below = "30s"     # Trellis thresholds on the queue wait
    reduce_above = "5m"
    licences = { matlab = 2 }
    nodes = 1                  # per placeholder (cpus on each): sized for parallel jobs (issue 36)
    launcher = "mpirun -np {tasks} --hostfile {hostfile}"   # how parallel jobs start (default: srun
                               # under Slurm, this mpirun elsewhere); fields: runtime/placeholder/launcher.py
    # pe = "mpi"               # Grid Engine only: the parallel environment (default smp)
    linger = "0s"              # an idle placeholder stays this long before it leaves (default: 60s on
                               # local, 0 on batch adapters: an idle one would hold an allocation)
    idle_cancel = "5s"         # no ready work this long: cancel the placeholders still queued
    command_timeout = "30s"    # longest wait for one batch command (sbatch, squeue, ...)

With no file, one ``local`` site sized to this machine.

A top-level ``[licences]`` table gives global limits, copies active at once across ALL sites
(``metasched licences set`` changes them later); a site's own ``licences`` limit it further::

    [licences]
    matlab = 4                 # at most 4 matlab jobs running anywhere

The combination rule: :func:`metasched.model.licence.free_copies`.

A site in another administrative domain (issue 9; seed 003, section 1.1) names an SSH destination;
its batch commands then run there over one multiplexed connection
(:class:`~metasched.runtime.remote.ssh.SshRunner`), and a site that cannot be reached is reported
down and retried with back-off while the other sites carry on::

    [sites.clusterB]
    adapter = "slurm"
    ssh = { host = "login.cluster-b.org", user = "alice", key = "~/.ssh/id_ed25519", jump = "gw.org" }
    workdir = "metasched/placeholders"   # on the site (relative = under the login's home)
    python = "/home/alice/venv/bin/python"   # runs the placeholder agent there
    transport = "ssh"                    # placeholders reach the metaqueue: http | ssh | tunnel
    metaqueue_ssh = { host = "ws.my-lab.org", user = "alice", key = "~/.ssh/metasched_placeholder" }

``transport``: ``http`` (default) hands placeholders the server URL; ``ssh`` makes them speak the
protocol over SSH with a restricted key (``metasched sites ssh-key``); ``tunnel`` opens a reverse
tunnel on the site's master connection (``tunnel_port`` on the site -> the server here) for sites
whose nodes reach nothing outside.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import time
import tomllib
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metasched.model.platform import PlatformError
from metasched.model.platform_file import LIVE_KEYS, SIM_KEYS, check_document
from metasched.policy.throttle import Throttle, TrellisThrottle
from metasched.runtime.batch import REGISTRY, BatchAdapter, BatchError, PlaceholderSpec, SiteDown
from metasched.runtime.metaqueue.states import PlaceholderState
from metasched.runtime.metaqueue.store import Store, StoreError, metasched_home
from metasched.runtime.metaqueue.workflow import parse_duration_s, parse_licences, parse_mem_mb
from metasched.runtime.placeholder.launcher import DEFAULT_LAUNCHER, Launcher, LauncherError
from metasched.runtime.remote.logs import ssh_mapping
from metasched.runtime.remote.runner import CommandError, CommandRunner, LocalRunner, SiteUnreachable
from metasched.runtime.remote.ssh import SshRunner, SshTarget
from metasched.runtime.remote.staging import (
    DEFAULT_STAGE_ROOT,
    STAGE_ENV,
    STAGE_ROOT_ENV,
    SiteStager,
    StageSpec,
    job_dir,
)

log = logging.getLogger("metasched.sites")

#: Every key of a ``[sites.NAME]`` table: the live keys and the simulator's (one description for both
#: drivers, :mod:`metasched.model.platform_file`); the live side ignores ``procs``, ``speed``, ...
_SITE_KEYS = {*LIVE_KEYS, *SIM_KEYS}
TRANSPORTS = ("http", "ssh", "tunnel")


@dataclass(slots=True)
class SiteConfig:
    name: str
    adapter: str = "local"
    queue: str | None = None
    cpus: int = 1
    mem_mb: int = 0
    wall_time_s: float | None = None
    limit: int = 4
    lower: int = 1
    initial: int = 1
    increase_below_s: float = 30.0
    reduce_above_s: float = 300.0
    licences: dict[str, int] = field(default_factory=dict)
    extra_args: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    idle_cancel_s: float = 5.0
    command_timeout_s: float = 30.0
    ssh: SshTarget | None = None
    workdir: str | None = None
    python: str | None = None
    transport: str = "http"
    metaqueue_ssh: dict[str, Any] = field(default_factory=dict)
    tunnel_port: int | None = None
    stage_root: str | None = None
    #: Parallel jobs (issue 36): nodes per placeholder (``cpus`` on each), the launcher template (``None``:
    #: the adapter's, srun or mpirun) and the Grid Engine parallel environment (``None``: smp).
    nodes: int = 1
    launcher: str | None = None
    pe: str | None = None
    #: How long a placeholder that ran out of work stays, idle, before it leaves (``linger``); ``None``: the
    #: adapter's default (:attr:`BatchAdapter.LINGER_S`: 60 s local, 0 on batch systems), see :attr:`idle_linger_s`.
    linger_s: float | None = None

    @property
    def is_remote(self) -> bool:
        return self.ssh is not None

    @property
    def idle_linger_s(self) -> float:
        """The linger time placeholders of this site get: ``linger``, else the adapter's default."""
        return REGISTRY[self.adapter].LINGER_S if self.linger_s is None else self.linger_s

    @classmethod
    def from_mapping(cls, name: str, raw: dict[str, Any], *, base_dir: Path | None = None) -> SiteConfig:
        unknown = set(raw) - _SITE_KEYS
        if unknown:
            first = sorted(unknown)[0]
            raise StoreError(
                f"site {name!r}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_SITE_KEYS))}"
                f", at sites.{name}.{first}"
            )
        adapter = str(raw.get("adapter", "local"))
        if adapter not in REGISTRY:
            raise StoreError(f"site {name!r}: unknown adapter {adapter!r}; known: {', '.join(sorted(REGISTRY))}")

        def duration(key: str, default: float | None) -> float | None:
            if key not in raw:
                return default
            try:
                return parse_duration_s(raw[key])
            except StoreError as exc:
                raise StoreError(f"site {name!r}: {exc}, at sites.{name}.{key}") from None

        def seconds(key: str, default: float) -> float:
            value = duration(key, default)
            assert value is not None
            return value

        cfg = cls(
            name=name,
            adapter=adapter,
            queue=raw.get("queue"),
            cpus=int(raw.get("cpus", 1)),
            mem_mb=parse_mem_mb(raw.get("mem", 0)),
            wall_time_s=duration("wall_time", None),
            limit=int(raw.get("limit", 4)),
            lower=int(raw.get("lower", 1)),
            initial=int(raw.get("initial", 1)),
            increase_below_s=seconds("increase_below", 30.0),
            reduce_above_s=seconds("reduce_above", 300.0),
            licences=parse_licences(raw.get("licences")),
            extra_args=[str(a) for a in raw.get("extra_args", [])],
            setup=[str(a) for a in raw.get("setup", [])],
            env={str(k): str(v) for k, v in (raw.get("env") or {}).items()},
            idle_cancel_s=seconds("idle_cancel", 5.0),
            command_timeout_s=seconds("command_timeout", 30.0),
            workdir=None if raw.get("workdir") is None else str(raw["workdir"]),
            python=None if raw.get("python") is None else str(raw["python"]),
            transport=str(raw.get("transport", "http")),
            metaqueue_ssh=dict(raw.get("metaqueue_ssh") or {}),
            tunnel_port=None if raw.get("tunnel_port") is None else int(raw["tunnel_port"]),
            stage_root=None if raw.get("stage_root") is None else str(raw["stage_root"]),
            nodes=int(raw.get("nodes", 1)),
            launcher=None if raw.get("launcher") is None else str(raw["launcher"]),
            pe=None if raw.get("pe") is None else str(raw["pe"]),
            linger_s=duration("linger", None),
        )
        if cfg.nodes < 1 or cfg.cpus < 1:
            raise StoreError(f"site {name!r}: cpus and nodes must be >= 1")
        if cfg.launcher is not None:
            try:
                Launcher(cfg.launcher)
            except LauncherError as exc:
                raise StoreError(f"site {name!r}: {exc}") from None
        if cfg.pe is not None and adapter != "gridengine":
            raise StoreError(f"site {name!r}: pe (a Grid Engine parallel environment) needs adapter 'gridengine'")
        if not 0 <= cfg.lower <= cfg.limit or cfg.limit < 1:
            raise StoreError(f"site {name!r}: need 0 <= lower <= limit and limit >= 1")
        if "ssh" in raw:
            if not isinstance(raw["ssh"], dict):
                raise StoreError(f"site {name!r}: ssh must be a table (host, user, port, key, jump, ...)")
            try:
                cfg.ssh = SshTarget.from_mapping(raw["ssh"], base_dir=base_dir)
            except ValueError as exc:
                raise StoreError(f"site {name!r}: {exc}") from None
            if adapter == "local":
                raise StoreError(f"site {name!r}: the local adapter cannot run on a remote site; use slurm, ...")
        if cfg.transport not in TRANSPORTS:
            raise StoreError(f"site {name!r}: transport must be one of {', '.join(TRANSPORTS)}, got {cfg.transport!r}")
        if cfg.transport == "ssh" and "host" not in cfg.metaqueue_ssh:
            raise StoreError(f"site {name!r}: transport 'ssh' needs metaqueue_ssh = {{ host = ..., key = ... }}")
        if cfg.transport == "tunnel" and (cfg.ssh is None or cfg.tunnel_port is None):
            raise StoreError(f"site {name!r}: transport 'tunnel' needs an ssh site and tunnel_port")
        return cfg


def idle_placement(
    job_cpus: Sequence[int],
    free_cpus: Sequence[int],
    *,
    one_each: bool = False,
    job_time_s: Sequence[float] | None = None,
    remaining_s: Sequence[float | None] | None = None,
) -> list[int | None]:
    """Where the ready jobs (their CPUs, in the order placeholders claim them: oldest first) go among idle
    placeholders with ``free_cpus`` each: per job, the index of the first placeholder it fits in (first fit),
    or ``None`` when it fits none (left to other placeholders). ``one_each``: placeholders of several
    nodes, which run one job at a time. ``job_time_s`` (0: not given) and the placeholders' ``remaining_s``
    (wall time left, ``None``: unbounded): a job never goes where it would outlive the wall time.

    Invariant: the jobs placed in one placeholder fit in its free CPUs together (and are at most one with
    ``one_each``) and within its remaining time; a job left out fits in no placeholder's room left by the
    jobs before it.
    """
    room = list(free_cpus)
    left: Sequence[float | None] = remaining_s if remaining_s is not None else [None] * len(room)
    out: list[int | None] = []
    for j, cpus in enumerate(job_cpus):
        need_s = job_time_s[j] if job_time_s is not None else 0.0
        at = next(
            (
                i
                for i, r in enumerate(room)
                if r > 0 and cpus <= r and (left[i] is None or need_s <= 0 or need_s <= (left[i] or 0.0))
            ),
            None,
        )
        if at is not None:
            room[at] = 0 if one_each else room[at] - cpus
        out.append(at)
    return out


def idle_takes(
    job_cpus: Sequence[int],
    free_cpus: Sequence[int],
    *,
    one_each: bool = False,
    job_time_s: Sequence[float] | None = None,
    remaining_s: Sequence[float | None] | None = None,
) -> int:
    """How many of the ready jobs idle placeholders take (:func:`idle_placement`): the site manager submits
    placeholders only for the rest."""
    placed = idle_placement(job_cpus, free_cpus, one_each=one_each, job_time_s=job_time_s, remaining_s=remaining_s)
    return sum(at is not None for at in placed)


def load_sites(path: str | Path | None) -> list[SiteConfig]:
    """Sites from a TOML file; with no file, one ``local`` site sized to this machine."""
    if path is None:
        n = os.cpu_count() or 1
        return [SiteConfig(name="local", adapter="local", limit=n, initial=n, increase_below_s=60.0)]
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise StoreError(f"cannot read site config {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise StoreError(f"{path}: invalid TOML ({exc})") from None
    sites = data.get("sites")
    if not isinstance(sites, dict) or not sites:
        raise StoreError(f"{path}: no [sites.NAME] tables")
    configs = [SiteConfig.from_mapping(name, raw, base_dir=Path(path).parent) for name, raw in sites.items()]
    try:
        check_document(data)  # the one description (sites.toml): the simulator's keys checked too
    except PlatformError as exc:
        raise StoreError(f"{path}: {exc}") from None
    return configs


def load_licences(path: str | Path | None) -> dict[str, int]:
    """The global licence limits of a site config (its top-level ``[licences]`` table; none without a file)."""
    if path is None:
        return {}
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise StoreError(f"cannot read site config {path}: {exc}") from None
    raw = data.get("licences", {})
    if not isinstance(raw, dict) or not all(isinstance(v, int) and not isinstance(v, bool) for v in raw.values()):
        raise StoreError(f"{path}: [licences] must map licence names to whole numbers of copies, got {raw!r}")
    bad = [k for k, v in raw.items() if v < 0]
    if bad:
        raise StoreError(f"{path}: [licences] copies must be >= 0: {', '.join(bad)}")
    return dict(raw)


class SiteLocks:
    """One site manager per site and database: a second manager of the same site is refused, naming the holder.

    Two managers of one site would each count the other's placeholders as theirs, cancel them when idle
    and stop them at shutdown (their jobs then run again elsewhere). So :meth:`acquire` takes, per site,
    a lock the operating system or the database server drops when its holder dies, even by ``kill -9``:
    on PostgreSQL a session advisory lock (``pg_try_advisory_lock``) on a connection of its own, whose
    ``application_name`` names the holder; on SQLite an ``flock`` on ``DB.site-NAME.lock`` next to the
    database, holding the same description. A dead holder's lock is free at once (its session or file
    closes with it), so a restarted manager takes over; the lock is retried for ``wait_s`` so a restart
    right after a crash does not race the server noticing the dead session. Managers of *different*
    sites share a database freely.
    """

    def __init__(self, store: Store, sites: Sequence[str], *, wait_s: float = 5.0) -> None:
        import socket
        from datetime import datetime

        self.holder = (
            f"metasched sites run pid {os.getpid()} on {socket.gethostname()} "
            f"since {datetime.now().strftime('%Y-%m-%d %H:%M:%S')}"
        )
        self.store = store
        self.sites = list(sites)
        self._files: list[Any] = []
        self._conn: Any = None
        self._engine: Any = None
        self._checked_at = time.monotonic()
        deadline = time.monotonic() + wait_s
        try:
            for name in sites:
                while (held_by := self._try(name)) is not None:
                    if time.monotonic() >= deadline:
                        raise StoreError(
                            f"site {name!r} is already managed by {held_by} on this database; stop that manager "
                            "first, or give this one other sites (one site manager per site)"
                        )
                    time.sleep(0.2)
        except BaseException:
            self.release()
            raise

    @staticmethod
    def key(site: str) -> int:
        """The site's advisory-lock key: 64 bits of a hash of a fixed prefix and its name, as a signed bigint."""
        import hashlib

        digest = hashlib.blake2b(f"metasched-site-manager:{site}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big", signed=True)

    def _try(self, site: str) -> str | None:
        """Take the lock of ``site``; ``None`` when taken, else a description of its holder."""
        url = self.store.engine.url
        if self.store.is_postgres:
            from sqlalchemy import create_engine, text
            from sqlalchemy.pool import NullPool

            if self._conn is None:
                self._engine = create_engine(url, poolclass=NullPool)
                self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
                self._conn.execute(text("SELECT set_config('application_name', :n, false)"), {"n": self.holder[:63]})
            key = self.key(site)
            if self._conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar():
                return None
            unsigned = key & 0xFFFFFFFFFFFFFFFF
            row = self._conn.execute(
                text(
                    "SELECT a.application_name, a.client_addr, a.pid FROM pg_locks l "
                    "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
                    "AND l.classid = :hi AND l.objid = :lo AND l.objsubid = 1"
                ),
                {"hi": unsigned >> 32, "lo": unsigned & 0xFFFFFFFF},
            ).first()
            if row is None:
                return "another manager (its session ended just now?)"
            return f"{row[0] or 'an unnamed session'} (server backend {row[2]}, client {row[1] or 'local'})"
        path = url.database
        if not path or path == ":memory:":
            return None  # a private database: no other manager can reach it
        import fcntl

        lock_path = Path(f"{path}.site-{site}.lock")
        f = open(lock_path, "a+")  # noqa: SIM115 - held open as long as the lock
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            held_by = f.read().strip() or "another manager"
            f.close()
            return f"{held_by} (lock file {lock_path})"
        f.seek(0)
        f.truncate()
        f.write(self.holder + "\n")
        f.flush()
        self._files.append(f)
        return None

    #: Seconds between checks that the PostgreSQL session holding the locks is alive.
    CHECK_EVERY_S = 10.0

    def check(self) -> None:
        """On PostgreSQL, every :attr:`CHECK_EVERY_S`: if the locks' session was lost (the database server
        restarted, the connection dropped), take the locks again on a new one; raise :class:`StoreError`
        if another manager took a site meanwhile. Flock locks cannot be lost this way."""
        if self._conn is None or time.monotonic() - self._checked_at < self.CHECK_EVERY_S:
            return
        self._checked_at = time.monotonic()
        from sqlalchemy import text
        from sqlalchemy.exc import DBAPIError

        try:
            self._conn.execute(text("SELECT 1"))
            return
        except DBAPIError:
            log.warning("the database session holding the site locks was lost: taking them again")
        with suppress(DBAPIError):
            self._conn.close()
        self._conn = None
        try:
            for name in self.sites:
                if (held_by := self._try(name)) is not None:
                    raise StoreError(f"lost site {name!r} to {held_by} while the database connection was down")
        except DBAPIError as exc:
            self._conn = None  # the database is still away: try again at the next check
            log.warning("could not take the site locks again yet: %s", exc)

    def release(self) -> None:
        for f in self._files:
            f.close()
        self._files.clear()
        if self._conn is not None:
            self._conn.close()  # ends the session: its advisory locks go with it
            self._conn = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


@dataclass(slots=True)
class _Site:
    cfg: SiteConfig
    adapter: BatchAdapter
    throttle: Throttle
    target: int
    runner: CommandRunner
    no_ready_since: float | None = None
    down_since: float | None = None
    last_error: str | None = None
    #: Failed rounds in a row, and the earliest instant of the next try (back-off, see :meth:`SiteManager.tick`).
    failures: int = 0
    next_try_at: float = 0.0

    @property
    def is_down(self) -> bool:
        return self.down_since is not None


class SiteManager:
    """Drives the sites of ``configs`` against ``store``. ``server``: URL placeholders use (else ``db_url``)."""

    #: Concurrent submissions to one SSH site (channels of its master; sshd allows 10 by default).
    SUBMIT_PARALLEL = 8
    #: A site whose batch commands fail is retried after 2, 4, 8, ... s (at most ``BACKOFF_CAP_S``); after
    #: ``DOWN_AFTER`` failed rounds in a row it is *down* (with the reason, in the store) and retried every
    #: ``DOWN_RETRY_S`` only. A site that cannot be reached at all (SSH) is down at once; its connection keeps
    #: its own back-off (:class:`~metasched.runtime.remote.ssh.SshRunner`).
    BACKOFF_BASE_S = 2.0
    BACKOFF_CAP_S = 60.0
    DOWN_AFTER = 3
    DOWN_RETRY_S = 300.0

    def __init__(
        self,
        store: Store,
        configs: Sequence[SiteConfig],
        *,
        db_url: str | None = None,
        server: str | None = None,
        token_file: str | None = None,
        workdir: str | Path | None = None,
        lease_s: float | None = None,
        python: str = sys.executable,
        backoff_base_s: float | None = None,
        backoff_cap_s: float | None = None,
        down_retry_s: float | None = None,
        lock_wait_s: float = 5.0,
    ):
        self.store = store
        self.backoff_base_s = self.BACKOFF_BASE_S if backoff_base_s is None else backoff_base_s
        self.backoff_cap_s = self.BACKOFF_CAP_S if backoff_cap_s is None else backoff_cap_s
        self.down_retry_s = self.DOWN_RETRY_S if down_retry_s is None else down_retry_s
        self.db_url = db_url
        self.server = server
        self.token_file = token_file
        self.workdir = Path(workdir) if workdir else metasched_home() / "placeholders"
        self.lease_s = lease_s if lease_s is not None else store.lease_s
        self.python = python
        self.sites: list[_Site] = []
        #: Held until :meth:`close`: a second manager of one of these sites on this database is refused.
        self.locks = SiteLocks(store, [cfg.name for cfg in configs], wait_s=lock_wait_s)
        for cfg in configs:
            runner: CommandRunner = SshRunner(cfg.ssh) if cfg.ssh is not None else LocalRunner()
            if cfg.workdir is not None:
                site_workdir = Path(cfg.workdir)
            elif cfg.is_remote:
                site_workdir = Path("metasched-placeholders") / cfg.name  # under the login's home on the site
            else:
                site_workdir = self.workdir / cfg.name
            adapter = REGISTRY[cfg.adapter](
                queue=cfg.queue,
                workdir=site_workdir,
                extra_args=cfg.extra_args,
                command_timeout_s=cfg.command_timeout_s,
                setup=cfg.setup,
                runner=runner,
            )
            if cfg.pe is not None:
                adapter.pe = cfg.pe  # type: ignore[attr-defined]
            throttle = TrellisThrottle(increase_below_s=cfg.increase_below_s, reduce_above_s=cfg.reduce_above_s)
            target = max(cfg.lower, min(cfg.limit, cfg.initial))
            self.sites.append(_Site(cfg, adapter, throttle, target, runner))
            store.upsert_site(cfg.name, cfg.adapter, self._site_info(self.sites[-1]), cfg.licences)
            store.set_site_target(cfg.name, target)
        #: One thread per site for its rounds (see :meth:`tick`), and the round of each site still running.
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.sites)), thread_name_prefix="site-round")
        self._rounds: dict[str, Future[None]] = {}

    def placeholder_command(self, cfg: SiteConfig, placeholder_id: str) -> list[str]:
        python = cfg.python or ("python3" if cfg.is_remote else self.python)
        cmd = [
            python,
            "-m",
            "metasched",
            "placeholder",
            "--site",
            cfg.name,
            "--id",
            placeholder_id,
            "--cpus",
            str(cfg.cpus),
            "--lease",
            str(self.lease_s),
        ]
        if cfg.transport == "ssh":
            m = cfg.metaqueue_ssh
            cmd += ["--ssh", (f"{m['user']}@" if m.get("user") else "") + str(m["host"])]
            for key, flag in (("port", "--ssh-port"), ("key", "--ssh-key"), ("known_hosts", "--ssh-known-hosts")):
                if m.get(key) is not None:
                    cmd += [flag, str(m[key])]
            if m.get("ssh_config") is not None:
                cmd += ["--ssh-config", str(m["ssh_config"])]
        elif cfg.transport == "tunnel":
            cmd += ["--server", f"http://127.0.0.1:{cfg.tunnel_port}"]
            if self.token_file:
                cmd += ["--token-file", self.token_file]
        elif self.server:
            cmd += ["--server", self.server]
            if self.token_file:
                cmd += ["--token-file", self.token_file]
        else:
            cmd += ["--db", self.db_url or ""]
        if cfg.wall_time_s:
            cmd += ["--wall-time", str(cfg.wall_time_s)]
        if cfg.nodes > 1:
            cmd += ["--nodes", str(cfg.nodes)]
        launcher = cfg.launcher or REGISTRY[cfg.adapter].LAUNCHER
        if launcher != DEFAULT_LAUNCHER:
            cmd += ["--launcher", launcher]
        if cfg.mem_mb:
            cmd += ["--mem", str(cfg.mem_mb)]
        if cfg.idle_linger_s > 0:
            cmd += ["--linger-for", str(cfg.idle_linger_s)]
        return cmd

    def _env(self, cfg: SiteConfig) -> dict[str, str]:
        # This machine's paths mean nothing on a remote site: there only the site's own env applies.
        keep = () if cfg.is_remote else ("PYTHONPATH", "METASCHED_HOME", "PATH")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        if cfg.stage_root is not None:
            env[STAGE_ROOT_ENV] = cfg.stage_root
        # The claim policy is a value, not a path: it applies on remote sites too.
        if "METASCHED_POLICY" in os.environ:
            env["METASCHED_POLICY"] = os.environ["METASCHED_POLICY"]
        env.update(cfg.env)
        return env

    def tick(self, now: float | None = None, *, wait_s: float | None = None) -> None:
        """One round over every site (a failing site is logged and skipped).

        Sites are independent: each site's round runs on a thread of its own, so a batch command that hangs
        (a controller that accepts and never answers, until the site's ``command_timeout``) holds only its site.
        ``wait_s``: how long to wait for the rounds started here (``None``: until they end). A site whose round
        from an earlier tick still runs gets none this time (never two rounds of one site at once: its
        back-off, down state and throttle are its round's alone). An error that is not the site's (a bug, the
        database) is raised here, from this tick or, for a round that outlived its tick, the next one.
        """
        now = time.time() if now is None else now
        self.locks.check()
        try:
            self.store.expire_leases(now)
        except Exception:
            log.exception("lease expiry failed")
        counts = self.store.counts()
        ready = counts.get("ready", 0)
        started: list[Future[None]] = []
        for site in self.sites:
            running = self._rounds.get(site.cfg.name)
            if running is not None:
                if not running.done():
                    log.debug("site %s: its last round still runs, none this time", site.cfg.name)
                    continue
                del self._rounds[site.cfg.name]
                running.result()  # (raises what the round raised)
            if now < site.next_try_at:
                continue  # backing off after failures: no batch command this round
            if len(self.sites) == 1:
                self._round(site, now, ready)  # nothing to hold up: no thread
                continue
            fut = self._pool.submit(self._round, site, now, ready)
            self._rounds[site.cfg.name] = fut
            started.append(fut)
        if started:
            wait(started, timeout=wait_s)
        for name, done in [(n, f) for n, f in self._rounds.items() if f.done()]:
            del self._rounds[name]
            done.result()

    def _round(self, site: _Site, now: float, ready: int) -> None:
        ok_before = site.adapter.ok_commands
        try:
            self._reach(site)
            self._tick_site(site, now, ready)
        except (BatchError, CommandError) as exc:
            self._failed(site, exc, now)
        else:
            # A round that ran no batch command proves nothing: a down site stays down until one succeeds
            # (an SSH site's reached master is proof enough).
            if site.adapter.ok_commands > ok_before or isinstance(site.runner, SshRunner):
                self._succeeded(site)

    def wait_rounds(self, timeout_s: float | None = None) -> bool:
        """Wait for the sites' rounds still running (``timeout_s``; ``None``: their end); whether none is left."""
        pending = [f for f in self._rounds.values() if not f.done()]
        if pending:
            wait(pending, timeout=timeout_s)
        return all(f.done() for f in self._rounds.values())

    def _failed(self, site: _Site, exc: Exception, now: float) -> None:
        """Count a failed round, schedule the next try, and mark the site down once failures repeat."""
        site.failures += 1
        site.last_error = str(exc)
        unreachable = isinstance(exc, SiteDown | SiteUnreachable)
        if not site.is_down and (unreachable or site.failures >= self.DOWN_AFTER):
            site.down_since = now
            self._publish(site)
            log.warning(
                "site %s is down after %d failed round(s) (the other sites carry on): %s",
                site.cfg.name,
                site.failures,
                exc,
            )
        if unreachable:
            delay = 0.0  # the SSH runner's own back-off paces the reconnects
        elif site.is_down:
            delay = self.down_retry_s
        else:
            delay = min(self.backoff_cap_s, self.backoff_base_s * 2 ** (site.failures - 1))
        site.next_try_at = now + delay
        log.warning("site %s unavailable: %s (next try in %.0f s)", site.cfg.name, exc, delay)

    def _succeeded(self, site: _Site) -> None:
        site.failures = 0
        site.next_try_at = 0.0
        if site.is_down:
            log.warning("site %s is back", site.cfg.name)
            site.down_since = None
            site.last_error = None
            self._publish(site)

    def _site_info(self, site: _Site) -> dict[str, Any]:
        cfg = site.cfg
        info: dict[str, Any] = {"queue": cfg.queue, "cpus": cfg.cpus, "limit": cfg.limit, "where": site.runner.target}
        # What one placeholder holds: the jobs' REASON column says "no site fits" from these (issue 36).
        info["mem_mb"] = cfg.mem_mb
        info["wall_time_s"] = cfg.wall_time_s
        info["nodes"] = cfg.nodes
        info["reach"] = {"state": "down" if site.down_since is not None else "up", "since": site.down_since}
        if cfg.ssh is not None:  # how `metasched logs` reaches the site to read a job's output (issue 36)
            info["ssh"] = ssh_mapping(cfg.ssh)
        if site.last_error:
            info["reach"]["error"] = site.last_error[:300]
        return info

    def _publish(self, site: _Site) -> None:
        """Record an up/down change in the store, for ``metasched sites list`` (only on changes: no write per round)."""
        try:
            self.store.upsert_site(site.cfg.name, site.cfg.adapter, self._site_info(site), site.cfg.licences)
        except Exception:
            log.exception("could not record the state of site %s", site.cfg.name)

    def _reach(self, site: _Site) -> None:
        """For an SSH site: make sure its master is up (raises at once while the site is in back-off), so
        a site is never reported back just because a quiet round sent it no command; and keep the
        reverse tunnel of a ``tunnel`` site on its current master (a new master has none)."""
        if not isinstance(site.runner, SshRunner):
            return
        site.runner.connect()
        if site.cfg.transport == "tunnel" and self.server:
            local_port = int(self.server.rstrip("/").rsplit(":", 1)[1])
            site.runner.keep_remote_forward(int(site.cfg.tunnel_port or 0), local_port)

    def health(self) -> dict[str, dict[str, Any]]:
        """Per site: up/down, since when, the last error, and for SSH sites the connection's back-off state."""
        out: dict[str, dict[str, Any]] = {}
        for site in self.sites:
            info: dict[str, Any] = {
                "state": "down" if site.down_since is not None else "up",
                "down_since": site.down_since,
                "last_error": site.last_error,
                "target": site.runner.target,
            }
            if isinstance(site.runner, SshRunner):
                info["ssh"] = site.runner.health.as_dict()
            out[site.cfg.name] = info
        return out

    def close(self) -> None:
        """Stop the SSH master connections and let another manager take these sites. A round still running
        (a hung batch command) is not waited for: it ends at its command's time-out."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        for site in self.sites:
            site.runner.close()
        self.locks.release()

    def stage_root(self, cfg: SiteConfig) -> str:
        """Where staged jobs run on the site (relative = under the login's home, as the job wrapper assumes)."""
        if cfg.stage_root is not None:
            return cfg.stage_root
        return DEFAULT_STAGE_ROOT if cfg.is_remote else str(Path.home() / DEFAULT_STAGE_ROOT)

    def _stage(self, site: _Site) -> None:
        """Copy inputs in and outputs back for this site's running jobs that declared them (see staging)."""
        jobs = {
            job_dir(self.stage_root(site.cfg), j["id"], j["attempts"]): StageSpec.from_json(j["env"][STAGE_ENV])
            for j in self.store.jobs(states=["running"], site=site.cfg.name)
            if STAGE_ENV in (j["env"] or {})
        }
        if not jobs:
            return
        report = SiteStager(site.runner, timeout_s=max(60.0, site.cfg.command_timeout_s)).sync(jobs)
        for d in report.staged_in:
            log.info("site %s: staged in %s", site.cfg.name, d)
        for d in report.staged_out:
            log.info("site %s: staged out %s", site.cfg.name, d)
        for d, why in report.failed.items():
            log.warning("site %s: staging failed for %s: %s", site.cfg.name, d, why)

    def _tick_site(self, site: _Site, now: float, ready: int) -> None:
        cfg = site.cfg
        self._stage(site)
        active = self.store.placeholders(cfg.name, active_only=True)
        states = site.adapter.poll([p["batch_id"] for p in active if p["batch_id"]])
        for p in active:
            st = states.get(p["batch_id"], PlaceholderState.UNKNOWN)
            if st == PlaceholderState.QUEUED and p["state"] == "submitted":
                self.store.update_placeholder(p["id"], state="queued")
            elif st in (
                PlaceholderState.DONE,
                PlaceholderState.EXPIRED,
                PlaceholderState.CANCELLED,
                PlaceholderState.FAILED,
                PlaceholderState.VANISHED,
            ):
                self.store.update_placeholder(p["id"], state=str(st), ended_at=now)
        # Throttle: every placeholder that has started since the last tick votes once.
        for p in self.store.placeholders(cfg.name):
            if p["started_at"] is not None and p["decision"] is None and p["wait_s"] is not None:
                decision, site.target = site.throttle.target(site.target, p["wait_s"], lower=cfg.lower, limit=cfg.limit)
                self.store.update_placeholder(p["id"], decision=decision)
                self.store.set_site_target(cfg.name, site.target)
                log.info(
                    "site %s: placeholder %s waited %.1fs -> %s, target %d",
                    cfg.name,
                    p["id"],
                    p["wait_s"],
                    decision,
                    site.target,
                )
        active = self.store.placeholders(cfg.name, active_only=True)
        waiting = [p for p in active if p["state"] in ("submitted", "queued")]
        if ready == 0:
            site.no_ready_since = site.no_ready_since if site.no_ready_since is not None else now
            if waiting and now - site.no_ready_since >= cfg.idle_cancel_s:
                site.adapter.cancel([p["batch_id"] for p in waiting if p["batch_id"]])
                for p in waiting:
                    self.store.update_placeholder(p["id"], state="cancelled", ended_at=now, decision="no-work")
                log.info("site %s: no ready work, cancelled %d queued placeholder(s)", cfg.name, len(waiting))
            return
        site.no_ready_since = None
        ready, idle_take = self._idle_capacity(cfg, active, ready, now)
        want = min(site.target - len(active), ready - len(waiting) - idle_take)
        if idle_take:
            log.debug("site %s: %d ready job(s), %d for idle placeholders", cfg.name, ready, idle_take)
        specs = []
        for _ in range(max(0, want)):
            pid = f"{cfg.name}-{uuid.uuid4().hex[:10]}"
            specs.append(
                PlaceholderSpec(
                    pid,
                    self.placeholder_command(cfg, pid),
                    cfg.cpus,
                    cfg.mem_mb,
                    cfg.wall_time_s,
                    self._env(cfg),
                    nodes=cfg.nodes,
                )
            )
        for spec, outcome in zip(specs, self._submit_all(site, specs), strict=True):
            if isinstance(outcome, BaseException):
                raise outcome
            self.store.add_placeholder(spec.placeholder_id, cfg.name, outcome, now)
            log.info(
                "site %s: submitted placeholder %s as %s (%s)",
                cfg.name,
                spec.placeholder_id,
                outcome,
                shlex.join(spec.command[:4]),
            )

    #: Seconds a placeholder keeps free before its wall time (the agent's ``--margin`` default).
    MARGIN_S = 5.0

    def _idle_capacity(
        self, cfg: SiteConfig, active: Sequence[dict[str, Any]], ready: int, now: float
    ) -> tuple[int, int]:
        """``(ready, taken)``: the ready jobs now, and how many of them this site's idle placeholders (started,
        holding no job: lingering, or just started) will take (:func:`idle_placement`, on the oldest ready
        jobs that fit the site's placeholder memory). Without idle placeholders, ``(ready, 0)``.

        With started placeholders, the ready jobs are counted again, after reading which placeholders hold a job:
        a job one of them claimed since the round's count (or claims in between) is then no longer ready,
        rather than ready with nobody idle to take it (one placeholder too many)."""
        started = {p["id"]: p for p in active if p["state"] == "running"}
        if not started:
            return ready, 0
        whole = cfg.cpus * cfg.nodes
        holding, ready, rows = self.store.holders_and_ready(list(started), rows_per_idle=4 * whole)
        idle = [p for pid, p in started.items() if pid not in holding]
        if not idle or not ready:
            return ready, 0
        jobs = [(cpus, t) for cpus, t, mem in rows if not cfg.mem_mb or mem <= cfg.mem_mb]
        remaining: list[float | None] = [
            None
            if cfg.wall_time_s is None or p["started_at"] is None
            else p["started_at"] + cfg.wall_time_s - self.MARGIN_S - now
            for p in idle
        ]
        taken = idle_takes(
            [c for c, _ in jobs],
            [whole] * len(idle),
            one_each=cfg.nodes > 1,
            job_time_s=[t for _, t in jobs],
            remaining_s=remaining,
        )
        return ready, taken

    def _submit_all(self, site: _Site, specs: Sequence[PlaceholderSpec]) -> list[str | BaseException]:
        """Submit a burst of placeholders; over SSH up to :attr:`SUBMIT_PARALLEL` at once on the one master
        (each submission is a few round trips, which overlap), locally one after the other. Every
        outcome is returned in order, so the successes are recorded even when one fails."""

        def one(spec: PlaceholderSpec) -> str | BaseException:
            try:
                return site.adapter.submit(spec)
            except (BatchError, CommandError) as exc:
                return exc

        if len(specs) <= 1 or not isinstance(site.runner, SshRunner):
            return [one(spec) for spec in specs]
        with ThreadPoolExecutor(max_workers=min(self.SUBMIT_PARALLEL, len(specs))) as pool:
            return list(pool.map(one, specs))

    def is_idle(self) -> bool:
        counts = self.store.counts()
        return counts.get("queued", 0) == 0 and counts.get("running", 0) == 0

    def stranded(self) -> str | None:
        """Why the work left cannot go on, or ``None``: jobs are queued, none runs, no placeholder is
        active at a site that is up, and every site is down (the reason names them and their errors)."""
        if not self.sites or not all(site.is_down for site in self.sites):
            return None
        counts = self.store.counts()
        if counts.get("queued", 0) == 0 or counts.get("running", 0) > 0:
            return None
        down = "; ".join(f"{site.cfg.name}: {(site.last_error or '?').splitlines()[0][:200]}" for site in self.sites)
        return f"{counts['queued']} job(s) queued but every site is down ({down})"

    def shutdown(self) -> None:
        """Cancel every active placeholder we know of (after the sites' rounds still running, so none submits
        a placeholder behind this; a site's round ends at the latest at its command time-out)."""
        self.wait_rounds(max((s.cfg.command_timeout_s for s in self.sites), default=0.0) * 2 + 5)
        for site in self.sites:
            active = self.store.placeholders(site.cfg.name, active_only=True)
            try:
                site.adapter.cancel([p["batch_id"] for p in active if p["batch_id"]])
            except BatchError as exc:
                log.warning("site %s: cancel failed: %s", site.cfg.name, exc)
            for p in active:
                self.store.update_placeholder(p["id"], state="cancelled", ended_at=time.time())

    def wait_for_work(self, interval_s: float) -> None:
        """Wait until the next round: ``interval_s``, or less when work becomes ready while none was.

        No tick between work and a placeholder: when nothing is ready, every commit to the store
        (SQLite's ``data_version``, PostgreSQL's ``NOTIFY``, see :meth:`Store.wait_for_change`) is followed by one
        indexed read, and the first ready job starts the next round at once. While work is ready, the
        round just made asked for its placeholders: the rest waits for the interval (the throttle's pace).
        """
        end = time.monotonic() + interval_s
        if self.store.is_work_ready():
            time.sleep(interval_s)
            return
        while (left := end - time.monotonic()) > 0:
            self.store.wait_for_change(left, poll_s=0.005)
            if self.store.is_work_ready():
                return

    def run(
        self,
        *,
        interval_s: float = 1.0,
        until_idle: bool = False,
        max_s: float | None = None,
        on_round: Callable[[SiteManager], None] | None = None,
    ) -> str:
        """Rounds of :meth:`tick` until stopped; returns why it stopped. ``until_idle``: stop when no job is
        queued or running, or when the only work left needs sites that are down. ``on_round`` is called
        after each round (progress display)."""
        t0 = time.time()
        try:
            while True:
                self.tick(wait_s=interval_s)  # a site still busy after that goes on alone; the others carry on
                if on_round is not None:
                    on_round(self)
                if until_idle and self.is_idle():
                    why = "no job queued or running"
                    log.info("%s: stopping (--until-idle)", why)
                    return why
                if until_idle and (why_stranded := self.stranded()) is not None:
                    log.warning("%s: stopping (--until-idle)", why_stranded)
                    return why_stranded
                if max_s is not None and time.time() - t0 > max_s:
                    log.info("ran for %.0f s: stopping", max_s)
                    return f"ran for {max_s:.0f} s"
                self.wait_for_work(interval_s)
        finally:
            if until_idle:
                self.shutdown()


@dataclass(slots=True)
class RunTally:
    """The jobs of one ``sites run``: those open (queued or running) when it started and those submitted
    since; :meth:`count` tallies them by outcome and site. Jobs that had ended before the run are not
    its business (a failure of yesterday must not fail today's run)."""

    open_at_start: frozenset[int]
    last_id_at_start: int

    @classmethod
    def start(cls, store: Store) -> RunTally:
        from sqlalchemy import func, select

        from metasched.runtime.metaqueue.models import JOBS

        with store.engine.connect() as conn:
            last = conn.execute(select(func.max(JOBS.c.id))).scalar() or 0
            open_ids = conn.execute(select(JOBS.c.id).where(JOBS.c.state.in_(["queued", "running"]))).scalars()
            return cls(frozenset(int(i) for i in open_ids), int(last))

    def count(self, store: Store) -> Tally:
        from sqlalchemy import select

        from metasched.runtime.metaqueue.models import JOBS

        first = min(self.open_at_start, default=self.last_id_at_start + 1)
        tally = Tally()
        with store.engine.connect() as conn:
            rows = conn.execute(select(JOBS.c.id, JOBS.c.state, JOBS.c.site).where(JOBS.c.id >= first))
            for job_id, state, site in rows:
                if job_id in self.open_at_start or job_id > self.last_id_at_start:
                    tally.add(str(state), site)
        return tally


#: How a job of the run counts: done, failed (its own failure or a dependency's), left (not ended), cancelled.
OUTCOME = {
    "done": "done",
    "failed": "failed",
    "dep_failed": "failed",
    "queued": "left",
    "running": "left",
    "cancelled": "cancelled",
}


@dataclass(slots=True)
class Tally:
    """Jobs by outcome (see :data:`OUTCOME`), overall and per site (jobs that never ran count under ``-``)."""

    total: dict[str, int] = field(default_factory=dict)
    by_site: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, state: str, site: str | None) -> None:
        outcome = OUTCOME.get(state, state)
        self.total[outcome] = self.total.get(outcome, 0) + 1
        per = self.by_site.setdefault(site or "-", {})
        per[outcome] = per.get(outcome, 0) + 1

    @property
    def ok(self) -> bool:
        """No job of the run failed and none was left undone."""
        return not self.total.get("failed") and not self.total.get("left")

    def line(self) -> str:
        t = self.total
        text = f"done {t.get('done', 0)}, failed {t.get('failed', 0)}, left {t.get('left', 0)}"
        return text + (f", cancelled {t['cancelled']}" if t.get("cancelled") else "")
