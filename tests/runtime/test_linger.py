"""Placeholders that linger (issue 34 item 3): a placeholder that ran out of work stays the site's ``linger``,
idle but woken at once, so that a job submitted a moment later starts without a new placeholder.

Real processes: ``metasched sites run`` on a local site, its placeholders, jobs. No timed assertions: a
lingering placeholder is shown by the placeholder ids of the jobs and the placeholders the store knows;
leaving after the linger time by a lower bound (it cannot leave before), waited for with a time-out.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metasched.model.platform import Platform
from metasched.runtime.manager import SiteConfig, SiteManager, idle_placement, idle_takes, load_sites
from metasched.runtime.metaqueue.protocol import StoreTransport
from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.runtime.placeholder.agent import Agent
from tests.runtime.procs import stop

SRC = str(Path(__file__).resolve().parents[2] / "src")


# ---------------------------------------------------------------- how many ready jobs idle placeholders take


def test_idle_takes_hand_worked() -> None:
    assert idle_takes([1], [1]) == 1  # the one job an idle placeholder will take: no new placeholder
    assert idle_takes([1, 1, 1], [1]) == 1  # two more than it takes: two placeholders to submit
    assert idle_takes([1, 1, 1], [4]) == 3
    assert idle_takes([2, 2, 2], [4]) == 2
    assert idle_takes([3, 2, 1], [4, 2]) == 3  # 3 -> first, 2 -> second, 1 -> first (room 1)
    assert idle_takes([8], [4, 4]) == 0  # fits none: left to another placeholder
    assert idle_takes([1, 1], [8], one_each=True) == 1  # a placeholder of several nodes: one job at a time
    assert idle_takes([], [4]) == 0 and idle_takes([1], []) == 0
    assert idle_placement([3, 2, 1, 5], [4, 2]) == [0, 1, 0, None]
    # A job that would outlive a placeholder's wall time is not its: 2 h does not fit the one with 60 s left.
    assert idle_placement([1, 1, 1], [1, 1], job_time_s=[7200, 30, 0], remaining_s=[60, None]) == [1, 0, None]


@given(
    jobs=st.lists(st.tuples(st.integers(1, 8), st.sampled_from([0.0, 10.0, 100.0])), max_size=12),
    places=st.lists(st.tuples(st.integers(0, 8), st.sampled_from([None, 5.0, 50.0, 500.0])), max_size=5),
    one_each=st.booleans(),
)
def test_idle_placement_fits_and_leaves_out_only_what_fits_nowhere(
    jobs: list[tuple[int, float]], places: list[tuple[int, float | None]], one_each: bool
) -> None:
    cpus, times = [c for c, _ in jobs], [t for _, t in jobs]
    free, left = [f for f, _ in places], [r for _, r in places]
    placed = idle_placement(cpus, free, one_each=one_each, job_time_s=times, remaining_s=left)
    assert len(placed) == len(jobs)
    assert idle_takes(cpus, free, one_each=one_each, job_time_s=times, remaining_s=left) == sum(
        p is not None for p in placed
    )

    def in_time(t: float, r: float | None) -> bool:
        return r is None or t <= 0 or t <= r

    room = list(free)
    for (c, t), at in zip(jobs, placed, strict=True):
        if at is None:  # first fit: it fitted nowhere at its turn
            assert all(r <= 0 or c > r or not in_time(t, rl) for r, rl in zip(room, left, strict=True))
            continue
        assert room[at] > 0 and c <= room[at] and in_time(t, left[at])
        room[at] = 0 if one_each else room[at] - c
    for i, f in enumerate(free):  # together within each placeholder's CPUs, one job each with one_each
        mine = [c for c, at in zip(cpus, placed, strict=True) if at == i]
        assert sum(mine) <= f and (not one_each or len(mine) <= 1)
    if all(c == 1 and t == 0 for c, t in jobs) and not one_each:
        assert sum(p is not None for p in placed) == min(len(jobs), sum(free))


# ---------------------------------------------------------------- the site's linger


def test_linger_default_is_a_minute_on_local_and_none_on_batch_systems(tmp_path: Path) -> None:
    f = tmp_path / "sites.toml"
    f.write_text(
        "\n".join(f'[sites.{a}]\nadapter = "{a}"' for a in ("local", "slurm", "gridengine", "pbs"))
        + '\n[sites.mine]\nadapter = "local"\nlinger = "90s"\n[sites.none]\nadapter = "local"\nlinger = 0\n'
        + '[sites.held]\nadapter = "slurm"\nlinger = "2m"\n'
    )
    got = {s.name: s.idle_linger_s for s in load_sites(f)}
    assert got == {"local": 60.0, "slurm": 0.0, "gridengine": 0.0, "pbs": 0.0, "mine": 90.0, "none": 0.0, "held": 120.0}
    (default,) = load_sites(None)
    assert default.idle_linger_s == 60.0


def test_placeholders_get_the_linger_time(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db)
    sites = [
        SiteConfig(name="here", adapter="local"),
        SiteConfig(name="quick", adapter="local", linger_s=0.0),
        SiteConfig(name="cluster", adapter="slurm"),
        SiteConfig(name="held", adapter="slurm", linger_s=30.0),
    ]
    manager = SiteManager(store, sites, db_url=db, workdir=tmp_path / "ph")
    try:
        cmds = {cfg.name: manager.placeholder_command(cfg, "p") for cfg in sites}
    finally:
        manager.close()
        store.close()
    assert cmds["here"][-2:] == ["--linger-for", "60.0"] and cmds["held"][-2:] == ["--linger-for", "30.0"]
    assert "--linger-for" not in cmds["quick"] and "--linger-for" not in cmds["cluster"]


@pytest.mark.parametrize("bad", ['"soon"', '"-5s"', "-1", "true"])
def test_a_bad_linger_is_one_error_naming_the_key(tmp_path: Path, bad: str) -> None:
    f = tmp_path / "sites.toml"
    f.write_text(f'[sites.a]\nadapter = "local"\nlinger = {bad}\n')
    with pytest.raises(StoreError, match=r"^site 'a': bad duration .*, at sites\.a\.linger$"):
        load_sites(f)
    if bad != '"soon"':
        return
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    db = f"sqlite:///{tmp_path / 'q.db'}"
    res = subprocess.run(
        [sys.executable, "-m", "metasched", "sites", "run", "--config", str(f), "--db", db, "--until-idle"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        "error: site 'a': bad duration 'soon': use seconds, 90s, 10m, 2h or H:MM:SS, at sites.a.linger"
    ]


def test_linger_is_a_live_key_the_simulator_reads_past(tmp_path: Path) -> None:
    f = tmp_path / "sites.toml"
    f.write_text('[sites.a]\nprocs = 8\nadapter = "local"\nlinger = "30s"\n')
    (site,) = Platform.from_toml(f).sites
    assert site.procs == 8 and site.live["linger"] == "30s"
    assert load_sites(f)[0].idle_linger_s == 30.0


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--linger-for", "soon"], "error: bad duration 'soon': use seconds, 90s, 10m, 2h or H:MM:SS, --linger-for"),
        (
            ["--linger", "--linger-for", "5"],
            "error: --linger (for ever) and --linger-for DURATION: give one, --linger-for",
        ),
    ],
)
def test_placeholder_linger_for_errors(tmp_path: Path, args: list[str], error: str) -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    cmd = [sys.executable, "-m", "metasched", "placeholder", "--site", "s", "--db", f"sqlite:///{tmp_path / 'q.db'}"]
    res = subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [error]


# ---------------------------------------------------------------- the agent


def _until(what: Callable[[], bool], timeout_s: float = 60.0, why: str = "") -> None:
    end = time.monotonic() + timeout_s
    while not what():
        if time.monotonic() > end:
            raise AssertionError(f"not within {timeout_s:.0f} s: {why}")
        time.sleep(0.02)


def test_agent_lingers_takes_the_next_job_and_leaves_after_its_linger(store: Store, tmp_path: Path) -> None:
    """On SQLite (woken by data_version) and PostgreSQL (NOTIFY): the job submitted while the agent lingers is
    its own; it leaves ``linger_for_s`` after its last job, not before."""
    (first,) = store.submit([JobSpec("true", name="first")])
    agent = Agent(StoreTransport(store), site="local", log_dir=tmp_path / "logs", linger_for_s=2.0)
    out: list[str] = []
    thread = threading.Thread(target=lambda: out.append(agent.run()), daemon=True)
    thread.start()
    _until(lambda: agent.lingering_since is not None, why="the agent lingers after its job")
    assert store.job(str(first))["state"] == "done" and thread.is_alive()
    (second,) = store.submit([JobSpec("true", name="second")])
    _until(lambda: store.job(str(second))["state"] == "done", why="the lingering agent runs the new job")
    thread.join(timeout=60)
    assert out == ["done"]
    ran = {store.job(str(j))["placeholder_id"] for j in (first, second)}
    assert ran == {agent.id}
    (row,) = store.placeholders("local")
    assert row["state"] == "done" and row["ended_at"] - store.job(str(second))["end_at"] >= 2.0


# ---------------------------------------------------------------- sites run


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}


def _site(tmp_path: Path, linger: str, limit: int = 2) -> Path:
    f = tmp_path / "sites.toml"
    f.write_text(
        f'[sites.local]\nadapter = "local"\nlimit = {limit}\ninitial = {limit}\nincrease_below = "1m"\n'
        f'linger = "{linger}"\n'
    )
    return f


def _sites_run(tmp_path: Path, config: Path, db: str, *extra: str) -> subprocess.Popen[str]:
    log = open(tmp_path / "sites-run.out", "w")  # noqa: SIM115 - the child's; read once it is stopped
    with log:
        return subprocess.Popen(
            [sys.executable, "-m", "metasched", "sites", "run", "--config", str(config), "--db", db, *extra],
            env=_env(tmp_path),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )


def _stop(proc: subprocess.Popen[str], tmp_path: Path) -> str:
    """SIGTERM (as a user's Ctrl-C or a service stop) and its output; killed if it does not end in 60 s."""
    assert stop(proc, grace_s=60), "sites run did not stop on SIGTERM"
    return (tmp_path / "sites-run.out").read_text()


def _alive(placeholder: dict[str, Any]) -> bool:
    """Whether the placeholder's process (local adapter: batch_id is its pid) still runs (a zombie does not)."""
    try:
        cmdline = Path(f"/proc/{placeholder['batch_id']}/cmdline").read_bytes()
    except OSError:
        return False
    return placeholder["id"].encode() in cmdline


def _done(store: Store, *ids: int) -> Callable[[], bool]:
    return lambda: all(store.job(str(j))["state"] == "done" for j in ids)


def test_a_lingering_placeholder_takes_the_next_job_and_more_start_for_more_work(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db)
    proc = _sites_run(tmp_path, _site(tmp_path, "10m"), db, "--interval", "0.2")
    try:
        (first,) = store.submit([JobSpec("true", name="first")])
        _until(_done(store, first), why="the first job runs")
        # Without linger its placeholder is gone by now (it leaves on the answer to its report).
        time.sleep(1.0)
        (ph,) = store.placeholders("local")
        assert ph["state"] == "running" and _alive(ph)
        (second,) = store.submit([JobSpec("true", name="second")])
        _until(_done(store, second), why="the second job runs")
        assert [p["id"] for p in store.placeholders("local")] == [ph["id"]]
        assert store.job(str(second))["placeholder_id"] == ph["id"]

        # Two jobs that run together: the idle placeholder takes one, the manager starts one for the other.
        gate = tmp_path / "release"
        wait = f"while [ ! -e {gate} ]; do sleep 0.05; done"
        pair = store.submit([JobSpec(wait, name="a"), JobSpec(wait, name="b")])
        _until(lambda: all(store.job(str(j))["state"] == "running" for j in pair), why="both run at once")
        holders = {store.job(str(j))["placeholder_id"] for j in pair}
        assert len(holders) == 2 and ph["id"] in holders
        assert {p["id"] for p in store.placeholders("local")} == holders
        gate.touch()
        _until(_done(store, *pair), why="the pair ends")
        lingering = store.placeholders("local", active_only=True)
        assert len(lingering) == 2 and all(_alive(p) for p in lingering)
    finally:
        out = _stop(proc, tmp_path)
    assert "sites run: stopped on SIGTERM" in out and "jobs of this run: done 4, failed 0, left 0" in out, out
    # Stopping the manager leaves no placeholder behind, lingering ones included.
    _until(lambda: not any(_alive(p) for p in lingering), timeout_s=30, why="the placeholders are gone")
    assert {p["state"] for p in store.placeholders("local")} == {"cancelled"}
    store.close()


def _lingering_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, limit: int) -> tuple[Store, SiteManager]:
    """A store and a manager (driven by the test's own ticks) of one local site whose placeholders linger 10 min."""
    monkeypatch.setenv("PYTHONPATH", SRC)
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db)
    cfg = SiteConfig(name="local", adapter="local", limit=limit, initial=limit, increase_below_s=60, linger_s=600)
    return store, SiteManager(store, [cfg], db_url=db, workdir=tmp_path / "ph")


def test_the_manager_counts_an_idle_placeholder_as_capacity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The manager's round sees ready work before an idle placeholder claims it (here: the placeholder is
    stopped, SIGSTOP): it submits no placeholder for the job the idle one will take, and one per job beyond."""
    store, manager = _lingering_site(tmp_path, monkeypatch, limit=4)

    def ticks_until(what: Callable[[], bool], why: str) -> None:
        def tick() -> bool:
            manager.tick()
            return what()

        _until(tick, why=why)

    try:
        (first,) = store.submit([JobSpec("true")])
        ticks_until(_done(store, first), "the first job runs")
        time.sleep(1.0)  # (without linger its placeholder would be gone by now)
        (ph,) = store.placeholders("local", active_only=True)
        assert ph["state"] == "running" and _alive(ph)
        pid = int(ph["batch_id"])
        os.kill(pid, signal.SIGSTOP)
        try:
            (second,) = store.submit([JobSpec("true")])
            for _ in range(3):
                manager.tick()
            assert [p["id"] for p in store.placeholders("local")] == [ph["id"]]  # the idle one will take it
            more = store.submit([JobSpec("true"), JobSpec("true")])
            manager.tick()
            assert len(store.placeholders("local")) == 3  # three ready, one for the idle placeholder
        finally:
            os.kill(pid, signal.SIGCONT)
        ticks_until(_done(store, second, *more), "the rest runs")
    finally:
        manager.shutdown()
        manager.close()
    store.close()


def test_a_job_claimed_since_the_rounds_count_starts_no_placeholder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The round counts the ready jobs first; a started placeholder may claim one before the site's turn
    (it is woken by the same commit). That job must not get a placeholder of its own."""
    store, manager = _lingering_site(tmp_path, monkeypatch, limit=2)
    gate = tmp_path / "release"
    try:
        (job,) = store.submit([JobSpec(f"while [ ! -e {gate} ]; do sleep 0.05; done")])

        def runs() -> bool:
            manager.tick()
            return store.job(str(job))["state"] == "running"

        _until(runs, why="the job runs")
        manager._tick_site(manager.sites[0], time.time(), 1)  # a count from before the claim: 1 ready
        assert len(store.placeholders("local")) == 1
    finally:
        gate.touch()
        manager.shutdown()
        manager.close()
    store.close()


def test_a_lingering_placeholder_leaves_after_the_linger_time(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db)
    proc = _sites_run(tmp_path, _site(tmp_path, "2s", limit=1), db, "--interval", "0.2")
    try:
        (job,) = store.submit([JobSpec("true")])
        _until(_done(store, job), why="the job runs")
        _until(lambda: not store.placeholders("local", active_only=True), why="the placeholder leaves")
        assert proc.poll() is None  # (the manager runs on: the placeholder left of its own accord)
        (ph,) = store.placeholders("local")
        assert ph["state"] == "done" and ph["ended_at"] - store.job(str(job))["end_at"] >= 2.0
        _until(lambda: not _alive(ph), timeout_s=30, why="its process ends")
    finally:
        out = _stop(proc, tmp_path)
    assert "jobs of this run: done 1, failed 0, left 0" in out, out
    store.close()


def test_linger_0_keeps_placeholders_leaving_when_the_work_is_done(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db)
    proc = _sites_run(tmp_path, _site(tmp_path, "0s"), db, "--interval", "0.2")
    try:
        (first,) = store.submit([JobSpec("true")])
        _until(_done(store, first), why="the first job runs")
        _until(lambda: not store.placeholders("local", active_only=True), why="its placeholder leaves")
        (second,) = store.submit([JobSpec("true")])
        _until(_done(store, second), why="the second job runs")
        phs = store.placeholders("local")
        assert len(phs) == 2 and phs[0]["state"] == "done"
        assert [store.job(str(j))["placeholder_id"] for j in (first, second)] == [p["id"] for p in phs]
    finally:
        _stop(proc, tmp_path)
    store.close()


@pytest.mark.parametrize("linger", ["0s", "10m"])
def test_until_idle_stops_when_the_work_is_done_lingering_or_not(tmp_path: Path, linger: str) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db)
    store.submit([JobSpec("true", name="a"), JobSpec("true", name="b", after=["a"]), JobSpec("exit 0", name="c")])
    config = _site(tmp_path, linger)
    res = subprocess.run(
        [sys.executable, "-m", "metasched", "sites", "run", "--config", str(config), "--db", db, "--until-idle"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=240,  # (far below the 10 min linger: the run does not wait for its placeholders to leave)
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [  # the same summary, lingering or not
        "sites run: no job queued or running",
        "jobs of this run: done 3, failed 0, left 0",
        f"  {'local':<16} {'done 3':<28} up",
    ]
    phs = store.placeholders("local")
    assert phs and not store.placeholders("local", active_only=True)
    _until(lambda: not any(_alive(p) for p in phs), timeout_s=30, why="no placeholder left behind")
    store.close()


def test_a_placeholder_holding_a_job_is_not_idle_whichever_its_place(tmp_path: Path) -> None:
    """Which started placeholders are idle is read once from the store: each of several placeholders holding a
    job counts as busy (the read was once an iterator consumed by the first placeholder's check, so every
    placeholder after the first counted as idle and took ready jobs it could not run)."""
    from metasched.policy.claim import FreeResources

    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db)
    cfg = SiteConfig(name="local", adapter="local", limit=4, initial=4, increase_below_s=60, linger_s=600)
    manager = SiteManager(store, [cfg], db_url=db, workdir=tmp_path / "ph")
    try:
        store.submit([JobSpec("true") for _ in range(5)])
        ids = ["p-idle", "p-busy1", "p-busy2"]
        for pid in ids[1:]:
            assert store.claim("local", pid, FreeResources(cpus=1), now=1).action == "job"
        active = [{"id": pid, "state": "running", "started_at": 1.0} for pid in ids]
        for order in (active, active[::-1], active[1:] + active[:1]):
            # 3 jobs ready; only p-idle is idle, with room for one of them.
            assert manager._idle_capacity(cfg, order, 3, now=2.0) == (3, 1)
    finally:
        manager.close()
        store.close()
