"""Prefetch (claims *ahead*), hand-back, group commit and the agent's fast paths (issue 7 speed work).

The invariants are the metaqueue's: a job is held by one placeholder at a time, a prefetched job
that its placeholder cannot run comes back to the queue (lease loss or hand-back), never lost and
never run twice, and a report is accepted once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.protocol import StoreTransport
from metasched.runtime.metaqueue.service import create_app
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.runtime.placeholder.agent import Agent, shell_argv

SRC = str(Path(__file__).resolve().parents[2] / "src")
ONE = FreeResources(cpus=1)
BUSY = FreeResources(cpus=0)


def _done(store: Store, job_id: int, attempt: int, placeholder: str = "p", code: int = 0) -> bool:
    return store.complete(job_id, placeholder, attempt, code)


def test_ahead_jobs_are_leased_running_and_exclusive(db_url: str) -> None:
    s = Store.open(db_url)
    ids = s.submit([JobSpec("true", name=f"j{i}") for i in range(10)])
    r = s.claim("s", "p", ONE, limit=1, ahead=3, whole=ONE)
    # one to start now, three ahead, in FCFS order
    assert [j.job_id for j in r.jobs] == ids[:4]
    assert {s.job(str(i))["state"] for i in ids[:4]} == {"running"}
    # a busy placeholder (no cpu free) may still take jobs ahead; never the ones another holds
    r2 = s.claim("s", "q", BUSY, limit=0, ahead=2, whole=ONE)
    assert [j.job_id for j in r2.jobs] == ids[4:6]
    assert s.heartbeat("p") == {i: 1 for i in ids[:4]}
    s.close()


def test_ahead_leaves_half_the_ready_jobs_to_others(db_url: str) -> None:
    s = Store.open(db_url)
    s.submit([JobSpec("true", name=f"j{i}") for i in range(5)])
    r = s.claim("s", "p", ONE, limit=1, ahead=8, whole=ONE)
    # 5 ready: 1 now, then at most half of the 4 left ahead
    assert len(r.jobs) == 3
    r = s.claim("s", "q", ONE, limit=1, ahead=8, whole=ONE)
    assert len(r.jobs) == 1  # 2 ready: 1 now, 1 left, half of it rounds down to none
    s.close()


def test_ahead_respects_remaining_wall_time(db_url: str) -> None:
    s = Store.open(db_url)
    ids = s.submit([JobSpec("true", name=f"j{i}", time_s=40) for i in range(6)])
    free = FreeResources(cpus=1, remaining_s=100)
    r = s.claim("s", "p", free, limit=1, ahead=5, whole=free)
    # 40 s now + 40 s ahead fit in 100 s; a third would not
    assert [j.job_id for j in r.jobs] == ids[:2]
    s.close()


def test_prefetched_job_comes_back_on_lease_loss_never_lost(db_url: str) -> None:
    s = Store.open(db_url, lease_s=5)
    ids = s.submit([JobSpec("true", name=f"j{i}") for i in range(6)])
    t0 = 1000.0
    r = s.claim("s", "p", ONE, limit=1, ahead=2, whole=ONE, now=t0)
    held = [(j.job_id, j.attempt) for j in r.jobs]
    assert len(held) == 3
    assert _done(s, *held[0])  # the first ran; then the placeholder died holding two ahead
    lost = s.expire_leases(now=t0 + 10)
    assert sorted(lost) == sorted(j for j, _ in held[1:])
    for jid, _ in held[1:]:
        job = s.job(str(jid))
        assert (job["state"], job["attempts"], job["placeholder_id"]) == ("queued", 1, None)
        assert not _done(s, jid, 1)  # a late report of the dead placeholder is refused
    # another placeholder gets them, and every job ends done exactly once
    seen: Counter[int] = Counter()
    while (r := s.claim("s", "q", ONE, limit=1, ahead=2, whole=ONE)).action == "job":
        for j in r.jobs:
            seen[j.job_id] += 1
            assert _done(s, j.job_id, j.attempt, "q")
    assert set(seen) == set(ids) - {held[0][0]} and set(seen.values()) == {1}
    assert {j["state"] for j in s.jobs()} == {"done"}
    s.close()


def test_release_hands_back_unstarted_jobs_without_counting_an_attempt(db_url: str) -> None:
    s = Store.open(db_url)
    ids = s.submit([JobSpec("true", name=f"j{i}") for i in range(4)])
    r = s.claim("s", "p", ONE, limit=1, ahead=1, whole=ONE)
    (a, b) = r.jobs
    assert s.release("q", [{"job_id": b.job_id, "attempt": b.attempt}]) == []  # not q's
    assert s.release("p", [{"job_id": b.job_id, "attempt": b.attempt + 1}]) == []  # not that attempt
    assert s.release("p", [{"job_id": b.job_id, "attempt": b.attempt}]) == [b.job_id]
    job = s.job(str(b.job_id))
    assert (job["state"], job["attempts"], job["placeholder_id"]) == ("queued", 0, None)
    assert not _done(s, b.job_id, b.attempt)  # handed back: a report for it is refused
    assert [e["kind"] for e in s.events(job_id=b.job_id)] == ["submit", "claim", "released", "stale_complete"]
    # the same call in a report, with the next claim in the same transaction
    accepted, nxt = s.report(
        "p",
        [{"job_id": a.job_id, "attempt": a.attempt, "exit_code": 0}],
        claim_site="s",
        free=ONE,
        limit=1,
    )
    assert accepted == [True] and nxt is not None and [j.job_id for j in nxt.jobs] == [ids[1]]
    s.close()


def test_batched_claims_in_one_transaction_never_share_a_job(db_url: str) -> None:
    s = Store.open(db_url)
    n = 60
    s.submit([JobSpec("true", name=f"j{i}") for i in range(n)])
    got: list[int] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        local = Store(s.engine)
        while True:
            calls = [
                lambda conn, now, i=i: local.claim_in(conn, now, "s", f"p{k}-{i}", FreeResources(2), 2)
                for i in range(4)
            ]
            results = local.run_batch(calls)
            jobs = [j.job_id for r in results for j in r.jobs]
            if not jobs:
                return
            with lock:
                got.extend(jobs)

    with ThreadPoolExecutor(3) as pool:
        list(pool.map(worker, range(3)))
    assert sorted(got) == sorted(j["id"] for j in s.jobs()) and len(got) == n
    s.close()


def test_a_failing_call_does_not_fail_its_batch(tmp_path: Path) -> None:
    s = Store.open(f"sqlite:///{tmp_path / 'q.db'}")
    (a,) = s.submit([JobSpec("true", name="a")])

    def boom(conn: Any, now: float) -> None:
        raise RuntimeError("bad request")

    ok, bad = s.run_batch([lambda conn, now: s.claim_in(conn, now, "s", "p", ONE, 1), boom])
    assert isinstance(bad, RuntimeError)
    assert [j.job_id for j in ok.jobs] == [a]
    # claimed once: the batch that failed left no trace, the claim was run again alone
    assert [e["kind"] for e in s.events(job_id=a)] == ["submit", "claim"]
    s.close()


def test_server_group_commit_hands_each_job_once(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    n = 80
    store.submit([JobSpec("true", name=f"j{i}") for i in range(n)])
    h = {"Authorization": "Bearer t-0123456789abcdef"}
    got: list[int] = []
    with TestClient(create_app(store, "t-0123456789abcdef")) as client:

        def worker(k: int) -> None:
            body = {"placeholder_id": f"p{k}", "site": "s", "cpus": 1, "limit": 1, "ahead": 2, "whole_cpus": 1}
            while True:
                out = client.post("/v1/claim", json=body, headers=h).json()
                if out["action"] != "job":
                    return
                got.extend(j["job_id"] for j in out["jobs"])

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(worker, range(8)))
        bad = client.post("/v1/claim", json={"placeholder_id": "p", "site": "s", "cpus": -1}, headers=h)
        assert bad.status_code == 422 and "cpus" in bad.text
        assert client.post("/v1/claim", json={"placeholder_id": "p", "site": "s"}).status_code == 401
        one = client.post("/v1/claim", json={"placeholder_id": "z", "site": "s"}, headers=h).json()
        assert one["action"] == "wait"  # all claimed, none finished
    assert sorted(got) == sorted(j["id"] for j in store.jobs()) and len(got) == n
    store.close()


def test_agent_prefetching_runs_every_job_once(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    ledger = tmp_path / "ledger"
    n = 60
    store.submit([JobSpec(f"echo $METASCHED_JOB_NAME >> {ledger}", name=f"j{i}") for i in range(n)])
    agents = [
        Agent(StoreTransport(Store(store.engine)), site="local", log_dir=tmp_path / "logs", prefetch=4)
        for _ in range(2)
    ]
    threads = [threading.Thread(target=a.run) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert Counter(ledger.read_text().split()) == {f"j{i}": 1 for i in range(n)}
    assert {j["state"] for j in store.jobs()} == {"done"}
    claims = [e for e in store.events() if e["kind"] == "claim"]
    assert len(claims) == n  # no job claimed twice, nothing handed back
    assert max(a.want_ahead() for a in agents) > 0  # short jobs: it did prefetch
    store.close()


def test_agent_hands_back_prefetched_jobs_it_cannot_finish(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    store.submit([JobSpec("true", name=f"j{i}") for i in range(40)])
    agent = Agent(
        StoreTransport(store), site="local", log_dir=tmp_path / "logs", prefetch=8, wall_time_s=1.5, margin_s=0.5
    )
    # Slow down each start a little so the wall time ends with jobs still prefetched.
    start = agent._start

    def slow_start(job: Any) -> None:
        time.sleep(0.05)
        start(job)

    agent._start = slow_start  # type: ignore[method-assign]
    assert agent.run() == "expired"
    states = Counter(j["state"] for j in store.jobs())
    assert states["running"] == 0  # nothing left leased to a placeholder that left
    assert states["done"] + states["queued"] == 40 and states["queued"] > 0
    for j in store.jobs(states=["queued"]):
        assert j["attempts"] == 0  # handed back: the attempt did not count


def test_kill_9_with_prefetched_jobs_loses_nothing(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=2)
    ledger = tmp_path / "ledger"
    n = 400
    store.submit([JobSpec(f"echo $METASCHED_JOB_NAME >> {ledger}", name=f"j{i}") for i in range(n)])
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-m", "metasched", "placeholder", "--site", "local", "--db", db, "--lease", "2"]
    proc = subprocess.Popen(argv, env=env)
    try:
        for _ in range(600):
            if store.counts().get("done", 0) >= 20:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # What the dead placeholder held: running, prefetched, or finished but not yet reported.
    held = {j["id"] for j in store.jobs(states=["running"])}
    assert held  # it was prefetching
    time.sleep(2.2)
    assert set(store.expire_leases()) == held
    # a fresh placeholder finishes the work: every job done, each accepted once
    assert Agent(StoreTransport(store), site="local", log_dir=tmp_path / "logs").run() == "done"
    assert {j["state"] for j in store.jobs()} == {"done"}
    done = Counter(e["job_id"] for e in store.events() if e["kind"] == "done")
    assert set(done) == {j["id"] for j in store.jobs()} and set(done.values()) == {1}
    # only a job the dead placeholder held can have run twice (its run was not reported); nothing is lost
    ran = Counter(ledger.read_text().split())
    assert set(ran) == {f"j{i}" for i in range(n)}
    assert sum(k - 1 for k in ran.values()) <= len(held)


def test_idle_placeholder_wakes_on_a_commit(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}")
    other = Store.open(f"sqlite:///{tmp_path / 'q.db'}")
    assert store.claim("s", "p", ONE).action == "exit"
    store.wait_for_change(0.01)  # opens the watch
    threading.Timer(0.2, lambda: other.submit([JobSpec("true")])).start()
    t0 = time.monotonic()
    store.wait_for_change(5.0)
    assert 0.15 < time.monotonic() - t0 < 2.0
    t0 = time.monotonic()
    store.wait_for_change(0.3)  # nothing more happens: the full timeout
    assert time.monotonic() - t0 >= 0.29
    store.close()
    other.close()


@pytest.mark.parametrize(
    ("command", "direct"),
    [
        ("true", True),
        ("sleep 1", True),
        ("echo hi", False),  # a builtin: bash's own echo
        ("sleep 1; true", False),
        ("ls *.txt", False),
        ("FOO=1 env", False),
        ("cat $HOME/x", False),
        ("cd /tmp", False),
        ("no-such-program-here x", False),
        ("./local-script", False),
        ("sleep 'a b'", False),
    ],
)
def test_simple_commands_skip_the_shell_only_when_bash_would_exec_them(command: str, direct: bool) -> None:
    argv = shell_argv(command, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert (argv[:2] != ["/bin/bash", "-c"]) == direct
    if direct:
        assert Path(argv[0]).is_absolute() and argv[1:] == command.split()[1:]


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab $;*'\"|&<>()\\\t=~")), max_size=12))
def test_direct_exec_never_for_shell_syntax(rest: str) -> None:
    argv = shell_argv("true " + rest, {"PATH": "/usr/bin:/bin"})
    special = set("$;*'\"|&<>()\\\t=~")
    if special & set(rest):
        assert argv[:2] == ["/bin/bash", "-c"]
    else:
        assert argv[1:] == rest.split()


def test_relative_path_entries_leave_lookup_to_bash() -> None:
    assert shell_argv("true", {"PATH": ".:/usr/bin"})[:2] == ["/bin/bash", "-c"]


def test_watchdog_forgets_an_ended_job_at_once_and_kills_only_live_ones() -> None:
    """A pid the agent said ended may soon lead somebody else's process group (pids wrap fast): the
    watchdog must not kill it when the agent goes; a job still listed is killed."""
    from metasched.runtime.placeholder.agent import RUN_TAG_VAR, _Watchdog

    other = subprocess.Popen(["sleep", "30"], start_new_session=True)  # stands for a reused pid
    ours = subprocess.Popen(["sleep", "30"], env={**os.environ, RUN_TAG_VAR: "tag-w"}, start_new_session=True)
    dog = _Watchdog("tag-w")
    try:
        dog.started(ours.pid)
        dog.started(other.pid)
        dog.ended(other.pid)  # and no further start follows: the end must not wait for one
        time.sleep(0.2)
        dog.close()  # the agent exits: EOF on the pipe
        assert ours.wait(timeout=10) == -signal.SIGKILL
        time.sleep(0.2)
        assert other.poll() is None
    finally:
        for p in (other, ours):
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)


def test_watchdog_kills_an_unlisted_job_by_its_run_tag() -> None:
    """The agent died after spawning a job but before listing it: the job carries the agent run's random tag
    in its environment, and the watchdog kills it; a process tagged by another run survives, and so does one
    carrying the same placeholder id (never a name: two placeholders may share one)."""
    from metasched.runtime.placeholder.agent import RUN_TAG_VAR, _Watchdog

    env = {**os.environ, "METASCHED_PLACEHOLDER": "ph-mine"}
    orphan = subprocess.Popen(["sleep", "30"], env={**env, RUN_TAG_VAR: "run-1"}, start_new_session=True)
    stranger = subprocess.Popen(["sleep", "30"], env={**env, RUN_TAG_VAR: "run-10"}, start_new_session=True)
    dog = _Watchdog("run-1")
    try:
        dog.close()
        assert orphan.wait(timeout=10) == -signal.SIGKILL
        assert stranger.poll() is None
    finally:
        for p in (orphan, stranger):
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)


def test_a_report_of_several_results_matches_one_by_one_completions(db_url: str) -> None:
    """One report of several finished jobs (PostgreSQL: one statement for all of them) must do what the
    same completions one by one do: refuse a stale attempt, fail a failed job's dependents, release a
    dependent of two jobs finished together, count the placeholder's runs."""
    s = Store.open(db_url)
    ok1, ok2, bad, stale, late = s.submit(
        [
            JobSpec("true", name="ok1"),
            JobSpec("true", name="ok2"),
            JobSpec("false", name="bad"),
            JobSpec("true", name="stale"),
            JobSpec("true", name="late"),
        ]
    )
    both, child_of_bad = s.submit([JobSpec("true", name="both", after=["ok1", "ok2"]), JobSpec("x", after=["bad"])])
    s.placeholder_started("p", "s", "h")
    got = {j.job_id: j for j in s.claim("s", "p", FreeResources(cpus=4), limit=4).jobs}
    assert sorted(got) == [ok1, ok2, bad, stale]
    results = [
        {"job_id": ok1, "attempt": got[ok1].attempt, "exit_code": 0, "start_at": 1.0, "end_at": 2.0},
        {"job_id": bad, "attempt": got[bad].attempt, "exit_code": 3, "start_at": 1.0, "end_at": 2.5},
        {"job_id": stale, "attempt": got[stale].attempt + 1, "exit_code": 0},
        {"job_id": ok2, "attempt": got[ok2].attempt, "exit_code": 0, "stdout_path": "/o", "stderr_path": "/e"},
    ]
    accepted, _ = s.report("p", results)
    assert accepted == [True, True, False, True]
    jobs = {j["id"]: j for j in s.jobs()}
    assert (jobs[ok1]["state"], jobs[ok1]["start_at"], jobs[ok1]["end_at"]) == ("done", 1.0, 2.0)
    assert (jobs[ok2]["state"], jobs[ok2]["stdout_path"], jobs[ok2]["stderr_path"]) == ("done", "/o", "/e")
    assert (jobs[bad]["state"], jobs[bad]["exit_code"], jobs[bad]["reason"]) == ("failed", 3, "exit code 3")
    assert jobs[stale]["state"] == "running"
    assert jobs[child_of_bad]["state"] == "dep_failed"
    assert jobs[both]["state"] == "queued"
    assert [e["kind"] for e in s.events(job_id=stale)][-1] == "stale_complete"
    assert [e["kind"] for e in s.events(job_id=bad)][-1] == "failed"
    assert [e["kind"] for e in s.events(job_id=ok1)][-1] == "done"
    assert [p["jobs_run"] for p in s.placeholders() if p["id"] == "p"] == [3]
    # both of "both"'s dependencies were done in that one report: it is ready now (pending 2 -> 0)
    nxt = s.claim("s", "q", FreeResources(cpus=4), limit=4)
    assert sorted(j.job_id for j in nxt.jobs) == sorted([both, late])
    s.close()


class _SlowReports(StoreTransport):
    """Holds each report carrying results until a job not started when it was sent has started (or 0.5 s)."""

    def __init__(self, store: Store, logs: Path) -> None:
        super().__init__(store)
        self.logs = logs
        self.overlapped = 0
        self.reports = 0

    def report(self, *args: Any, **kwargs: Any) -> Any:
        if args[1]:  # results
            self.reports += 1
            before = set(self.logs.glob("*.out"))
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                if set(self.logs.glob("*.out")) - before:
                    self.overlapped += 1
                    break
                time.sleep(0.002)
        return super().report(*args, **kwargs)


def test_reports_overlap_the_next_jobs_runs(tmp_path: Path) -> None:
    """While a report is on its way, the agent keeps starting its prefetched jobs: a report held until another
    job starts is released by the agent itself (a blocking report would wait out its 0.5 s every time)."""
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}")
    ids = store.submit([JobSpec("true") for _ in range(40)])
    logs = tmp_path / "logs"
    transport = _SlowReports(store, logs)
    agent = Agent(transport, site="local", log_dir=logs, idle_exit_s=0.5)
    assert agent.run() == "done"
    assert transport.overlapped >= 3, (transport.overlapped, transport.reports)
    jobs = {j["id"]: j for j in store.jobs()}
    assert all(jobs[i]["state"] == "done" and jobs[i]["attempts"] == 1 for i in ids)
    assert agent.jobs_run == 40
