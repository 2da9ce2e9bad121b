"""What a claim policy adds to one claim, at 1,000 queued jobs (issue 8: at most 1 ms).

Fills a SQLite metaqueue with 1,000 ready jobs of three kinds, a learned history at three sites
and 12 active placeholders (idle, busy, queued), then times ``Store.claim`` (each claim is one
transaction; the claimed job is completed at once so the queue stays at 1,000) under each policy,
and, separately, the policy's ``select`` alone on the snapshot the store hands it.

    PYTHONPATH=src python bench/bench_claim_policy.py [--claims 300] [--licences]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from metasched.model.job import Job
from metasched.policy.claim import REGISTRY, ClaimPolicy, ClaimWorld, FreeResources
from metasched.runtime.metaqueue.estimates import job_kind
from metasched.runtime.metaqueue.store import JobSpec, Store

SITES = ("fast", "mid", "slow")
SPEED = {"fast": 1.0, "mid": 1.6, "slow": 3.0}
BASE = {"sim": 20.0, "render": 50.0, "prep": 5.0}


class Spy(ClaimPolicy):
    """Wraps a policy, timing ``select`` and keeping the last snapshot."""

    key = "spy"

    def __init__(self, inner: ClaimPolicy) -> None:
        self.inner = inner
        self.needs_world = inner.needs_world  # type: ignore[misc]
        self.times: list[float] = []
        self.last: tuple[list[Job], str, FreeResources, float, ClaimWorld | None] | None = None

    def select(self, ready, site, free, now, limit=1, world=None):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        out = self.inner.select(ready, site, free, now, limit, world)
        self.times.append(time.perf_counter() - t)
        self.last = (list(ready), site, free, now, world)
        return out


def spec(name: str, licences: bool) -> JobSpec:
    """A no-op job; with ``licences``, every ``render`` job needs one copy of the global licence ``lm``."""
    return JobSpec("true", name=name, licences={"lm": 1} if licences and name.startswith("render") else {})


def setup(path: Path, policy: ClaimPolicy, licences: bool = False) -> Store:
    store = Store.open(f"sqlite:///{path}", policy=policy, lease_s=1e9, learn_every_s=float("inf"))
    # history: 30 done runs per (kind, site)
    kinds = list(BASE)
    for s in SITES:
        store.add_placeholder(f"h-{s}", s, None, now=0.0)
        store.placeholder_started(f"h-{s}", s, "h", now=0.0)
    t = 1.0
    n = 0
    for s in SITES:
        store.submit([JobSpec("true", name=f"{k}-{n + i}") for i in range(30) for k in kinds], now=t)
        n += 30
        for _k in kinds:
            for _ in range(30):
                res = store.claim(s, f"h-{s}", FreeResources(1), now=t)
                for j in res.jobs:
                    run = BASE[job_kind(j.name, j.command)] * SPEED[s]
                    store.complete(j.job_id, f"h-{s}", j.attempt, 0, start_at=t, end_at=t + run, now=t + run)
                t += 1
    for s in SITES:
        store.update_placeholder(f"h-{s}", state="done")
    if licences:  # a global pool (50 copies) that the site also lists: the claim takes the licence locks
        store.set_licence("lm", 50, now=t)
        for s in SITES:
            store.upsert_site(s, "local", {}, {"lm": 40}, now=t)
    store.submit([spec(f"{kinds[i % 3]}-{10_000 + i}", licences) for i in range(1000)], now=t)
    for s in SITES:
        for i in range(4):
            pid = f"{s}-{i}"
            store.add_placeholder(pid, s, None, now=t)
            if i < 3:
                store.placeholder_started(pid, s, "h", now=t + 1)
    for s in SITES:  # one busy placeholder per site
        store.claim(s, f"{s}-1", FreeResources(1), now=t + 2)
    store.submit([spec(f"{kinds[i % 3]}-{20_000 + i}", licences) for i in range(3)], now=t + 2)
    return store


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--claims", type=int, default=300)
    ap.add_argument("--licences", action="store_true", help="a third of the jobs need a global licence")
    args = ap.parse_args()
    # One store per policy, claims taken round-robin (one per policy in turn), so every policy is
    # measured under the same machine load; CPU time (thread_time) is the figure least moved by load.
    tmp = tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None)
    runs = {}
    for key, cls in REGISTRY.items():
        spy = Spy(cls())
        store = setup(Path(tmp.name) / f"{key}.db", spy, args.licences)
        store.estimates()
        spy.times.clear()
        world_times: list[float] = []
        build = store._world

        def timed_world(*a, _build=build, _times=world_times):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            out = _build(*a)
            _times.append(time.perf_counter() - t)
            return out

        store._world = timed_world  # type: ignore[method-assign]
        runs[key] = (store, spy, world_times, [], [])
    now = 10_000.0
    for _ in range(args.claims):
        for store, _spy, _w, wall, cpu in runs.values():
            t, c = time.perf_counter(), time.thread_time()
            res = store.claim("mid", "mid-0", FreeResources(1), now=now)
            cpu.append(time.thread_time() - c)
            wall.append(time.perf_counter() - t)
            for j in res.jobs:  # keep 1,000 queued: complete and resubmit one
                store.complete(j.job_id, "mid-0", j.attempt, 0, start_at=now, end_at=now + 1, now=now + 1)
                store.submit([spec(f"{job_kind(j.name, j.command)}-{100_000 + j.job_id}", args.licences)], now=now + 1)
        now += 2
    print(
        f"{'policy':16} {'claim min':>10} {'claim median':>13} {'CPU min':>9} {'CPU median':>11} {'select median':>14}"
        f" {'world median':>13} {'CPU median vs fcfs':>19}"
    )
    base = statistics.median(runs["fcfs"][4])
    for key, (store, spy, world_times, wall, cpu) in runs.items():
        ready = store.counts()["ready"]
        store.close()
        ms = [1e3 * min(wall), 1e3 * statistics.median(wall), 1e3 * min(cpu), 1e3 * statistics.median(cpu)]
        smed = statistics.median(spy.times) * 1e3
        wmed = f"{statistics.median(world_times) * 1e3:10.3f} ms" if world_times else f"{'-':>13}"
        extra = f"{1e3 * (statistics.median(cpu) - base):+15.2f} ms" if key != "fcfs" else f"{'-':>18}"
        print(
            f"{key:16} {ms[0]:7.2f} ms {ms[1]:10.2f} ms {ms[2]:6.2f} ms {ms[3]:8.2f} ms {smed:11.3f} ms {wmed}"
            f" {extra}   ready={ready}"
        )
    tmp.cleanup()
    print("snapshot the policy sees: the store's window of 256 ready jobs (of 1,000), 3 sites, 12 placeholders")


if __name__ == "__main__":
    main()
