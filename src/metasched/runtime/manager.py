"""The site manager (``metasched sites run``): keeps placeholders in each site's queue.

Per site and per tick: poll the placeholders' batch states (one site failing does not stop the
others); when a placeholder has started, let the throttle (Trellis: queue wait -> increase /
maintain / reduce) move the site's target count, within ``[lower, limit]``; when the metaqueue has
had no ready work for ``idle_cancel_s``, cancel placeholders still queued instead of letting them
start empty; submit placeholders up to the target while there is ready work, which also replaces
placeholders that vanished. Leases are expired every tick too, so no server is needed.

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

With no file, one ``local`` site sized to this machine.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import time
import tomllib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metasched.policy.throttle import Throttle, TrellisThrottle
from metasched.runtime.batch import REGISTRY, BatchAdapter, BatchError, PlaceholderSpec
from metasched.runtime.metaqueue.states import PlaceholderState
from metasched.runtime.metaqueue.store import Store, StoreError, metasched_home
from metasched.runtime.metaqueue.workflow import parse_duration_s, parse_licences, parse_mem_mb

log = logging.getLogger("metasched.sites")

_SITE_KEYS = {
    "adapter",
    "queue",
    "cpus",
    "mem",
    "wall_time",
    "limit",
    "lower",
    "initial",
    "increase_below",
    "reduce_above",
    "licences",
    "extra_args",
    "setup",
    "env",
    "idle_cancel",
    "command_timeout",
}


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

    @classmethod
    def from_mapping(cls, name: str, raw: dict[str, Any]) -> SiteConfig:
        unknown = set(raw) - _SITE_KEYS
        if unknown:
            raise StoreError(
                f"site {name!r}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_SITE_KEYS))}"
            )
        adapter = str(raw.get("adapter", "local"))
        if adapter not in REGISTRY:
            raise StoreError(f"site {name!r}: unknown adapter {adapter!r}; known: {', '.join(sorted(REGISTRY))}")
        cfg = cls(
            name=name,
            adapter=adapter,
            queue=raw.get("queue"),
            cpus=int(raw.get("cpus", 1)),
            mem_mb=parse_mem_mb(raw.get("mem", 0)),
            wall_time_s=parse_duration_s(raw["wall_time"]) if "wall_time" in raw else None,
            limit=int(raw.get("limit", 4)),
            lower=int(raw.get("lower", 1)),
            initial=int(raw.get("initial", 1)),
            increase_below_s=parse_duration_s(raw.get("increase_below", 30)),
            reduce_above_s=parse_duration_s(raw.get("reduce_above", 300)),
            licences=parse_licences(raw.get("licences")),
            extra_args=[str(a) for a in raw.get("extra_args", [])],
            setup=[str(a) for a in raw.get("setup", [])],
            env={str(k): str(v) for k, v in (raw.get("env") or {}).items()},
            idle_cancel_s=parse_duration_s(raw.get("idle_cancel", 5)),
            command_timeout_s=parse_duration_s(raw.get("command_timeout", 30)),
        )
        if not 0 <= cfg.lower <= cfg.limit or cfg.limit < 1:
            raise StoreError(f"site {name!r}: need 0 <= lower <= limit and limit >= 1")
        return cfg


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
    return [SiteConfig.from_mapping(name, raw) for name, raw in sites.items()]


@dataclass(slots=True)
class _Site:
    cfg: SiteConfig
    adapter: BatchAdapter
    throttle: Throttle
    target: int
    no_ready_since: float | None = None
    down_since: float | None = None


class SiteManager:
    """Drives the sites of ``configs`` against ``store``. ``server``: URL placeholders use (else ``db_url``)."""

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
    ):
        self.store = store
        self.db_url = db_url
        self.server = server
        self.token_file = token_file
        self.workdir = Path(workdir) if workdir else metasched_home() / "placeholders"
        self.lease_s = lease_s if lease_s is not None else store.lease_s
        self.python = python
        self.sites: list[_Site] = []
        for cfg in configs:
            adapter = REGISTRY[cfg.adapter](
                queue=cfg.queue,
                workdir=self.workdir / cfg.name,
                extra_args=cfg.extra_args,
                command_timeout_s=cfg.command_timeout_s,
                setup=cfg.setup,
            )
            throttle = TrellisThrottle(increase_below_s=cfg.increase_below_s, reduce_above_s=cfg.reduce_above_s)
            target = max(cfg.lower, min(cfg.limit, cfg.initial))
            self.sites.append(_Site(cfg, adapter, throttle, target))
            store.upsert_site(
                cfg.name, cfg.adapter, {"queue": cfg.queue, "cpus": cfg.cpus, "limit": cfg.limit}, cfg.licences
            )
            store.set_site_target(cfg.name, target)

    def placeholder_command(self, cfg: SiteConfig, placeholder_id: str) -> list[str]:
        cmd = [
            self.python,
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
        if self.server:
            cmd += ["--server", self.server]
            if self.token_file:
                cmd += ["--token-file", self.token_file]
        else:
            cmd += ["--db", self.db_url or ""]
        if cfg.wall_time_s:
            cmd += ["--wall-time", str(cfg.wall_time_s)]
        if cfg.mem_mb:
            cmd += ["--mem", str(cfg.mem_mb)]
        return cmd

    def _env(self, cfg: SiteConfig) -> dict[str, str]:
        env = {k: os.environ[k] for k in ("PYTHONPATH", "METASCHED_HOME", "PATH") if k in os.environ}
        env.update(cfg.env)
        return env

    def tick(self, now: float | None = None) -> None:
        """One round over every site (a failing site is logged and skipped)."""
        now = time.time() if now is None else now
        try:
            self.store.expire_leases(now)
        except Exception:
            log.exception("lease expiry failed")
        counts = self.store.counts()
        ready = counts.get("ready", 0)
        for site in self.sites:
            try:
                self._tick_site(site, now, ready)
                if site.down_since is not None:
                    log.warning("site %s is back", site.cfg.name)
                site.down_since = None
            except BatchError as exc:
                if site.down_since is None:
                    site.down_since = now
                log.warning("site %s unavailable: %s", site.cfg.name, exc)

    def _tick_site(self, site: _Site, now: float, ready: int) -> None:
        cfg = site.cfg
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
        want = min(site.target - len(active), ready - len(waiting))
        for _ in range(max(0, want)):
            pid = f"{cfg.name}-{uuid.uuid4().hex[:10]}"
            spec = PlaceholderSpec(
                pid, self.placeholder_command(cfg, pid), cfg.cpus, cfg.mem_mb, cfg.wall_time_s, self._env(cfg)
            )
            batch_id = site.adapter.submit(spec)
            self.store.add_placeholder(pid, cfg.name, batch_id, now)
            log.info(
                "site %s: submitted placeholder %s as %s (%s)", cfg.name, pid, batch_id, shlex.join(spec.command[:4])
            )

    def is_idle(self) -> bool:
        counts = self.store.counts()
        return counts.get("queued", 0) == 0 and counts.get("running", 0) == 0

    def shutdown(self) -> None:
        """Cancel every active placeholder we know of."""
        for site in self.sites:
            active = self.store.placeholders(site.cfg.name, active_only=True)
            try:
                site.adapter.cancel([p["batch_id"] for p in active if p["batch_id"]])
            except BatchError as exc:
                log.warning("site %s: cancel failed: %s", site.cfg.name, exc)
            for p in active:
                self.store.update_placeholder(p["id"], state="cancelled", ended_at=time.time())

    def run(self, *, interval_s: float = 1.0, until_idle: bool = False, max_s: float | None = None) -> None:
        t0 = time.time()
        try:
            while True:
                self.tick()
                if until_idle and self.is_idle():
                    break
                if max_s is not None and time.time() - t0 > max_s:
                    break
                time.sleep(interval_s)
        finally:
            if until_idle:
                self.shutdown()
