"""End to end against the real thing: a checkers-lattice workflow run by placeholders in a real Slurm AND a
real Grid Engine at once (started by scripts/testbed/up), through the HTTP server, while placeholders are
killed (scancel, qdel, kill -9) mid-job and the server is killed (-9) and restarted once.

Proves: every job completed exactly once successfully (one accepted completion; the ledger the jobs append to
has one "end" line for the accepted attempt), no job started before its dependencies ended, no two runs of a
job overlapped (each run holds an exclusive flock on the job's lock file; a second holder would log OVERLAP),
and the throttle changed placeholder counts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from metasched.runtime.metaqueue.store import Store
from tests.runtime.conftest import have, pg_database
from tests.runtime.lattice import lattice

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(900)]
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _require_batch_systems() -> None:
    if not (os.environ.get("SLURM_CONF") and have("sbatch", "squeue", "scancel")):
        pytest.skip("Slurm not available (scripts/testbed/up starts it as root; SLURM_CONF unset)")
    if not (os.environ.get("SGE_ROOT") and have("qsub", "qstat", "qdel", "qacct")):
        pytest.skip("Grid Engine not available (scripts/testbed/up starts it as root; SGE_ROOT unset)")
    try:
        subprocess.run(["squeue", "-h"], check=True, capture_output=True, timeout=10)
        subprocess.run(["qstat"], check=True, capture_output=True, timeout=10)
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"batch systems not answering: {exc}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Both backends (issue 33: the fault-tolerance proof holds on PostgreSQL too); a fresh database each."""
    if request.param == "postgresql":
        yield from pg_database()
    else:
        yield f"sqlite:///{tmp_path / 'mq.db'}"


def _pids_of_placeholder(placeholder_id: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (d / "cmdline").read_bytes().split(b"\0")
                if b"placeholder" in argv and placeholder_id.encode() in argv:
                    out.append(int(d.name))
    return out


def test_lattice_over_slurm_and_gridengine_with_kills(tmp_path: Path, db: str) -> None:
    _require_batch_systems()
    home = tmp_path / "home"
    home.mkdir()
    ledger = tmp_path / "ledger.txt"
    locks = tmp_path / "locks"
    locks.mkdir()
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(home)}
    token_file = home / "token"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    lease = 6.0
    command = (
        f"exec 9>>{locks}/{{name}}.lock; flock -n 9 || echo OVERLAP {{name}} >> {ledger}; "
        f'echo "start {{name}} $METASCHED_ATTEMPT $METASCHED_SITE $(date +%s.%N)" >> {ledger}; '
        f"sleep 0.3 9>&-; "
        f'echo "end {{name}} $METASCHED_ATTEMPT $METASCHED_SITE $(date +%s.%N)" >> {ledger}'
    )
    specs = lattice(14, command)  # 196 jobs over 27 levels
    # The retry limit must exceed what the injected faults can take from one job, or a job fails by
    # design and its dependents with it. Four faults are injected and each costs a job at most one attempt:
    # a killed placeholder's jobs lose their lease once; across the server restart a running job keeps its
    # lease (the server grants one lease of grace at start, the placeholder heartbeats what it holds) or,
    # if the outage outlasts the placeholder's fencing deadline, is fenced and counted once; prefetched
    # jobs dropped meanwhile go back uncounted. So 5 attempts always suffice (the default is 3).
    for spec in specs:
        spec.max_attempts = 5
    store = Store.open(db, lease_s=lease)
    store.submit(specs)
    (tmp_path / "sites.toml").write_text(
        "\n".join(
            f'[sites.{name}]\nadapter = "{adapter}"\nqueue = "{queue}"\ncpus = 1\nwall_time = "{wall}"\n'
            f'limit = {limit}\ninitial = 1\nincrease_below = "{inc}"\nreduce_above = "{red}"\nidle_cancel = "3s"\n'
            for name, adapter, queue, wall, limit, inc, red in [
                ("slurmA", "slurm", "siteA", "45s", 2, "20s", "40s"),
                ("slurmB", "slurm", "siteB", "60s", 4, "20s", "40s"),
                ("sgeA", "gridengine", "siteA.q", "45s", 2, "20s", "40s"),
                ("sgeB", "gridengine", "siteB.q", "60s", 3, "3s", "6s"),
            ]
        )
    )

    def start_server() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "metasched",
                "server",
                "--port",
                str(port),
                "--db",
                db,
                "--lease",
                str(lease),
                "--token-file",
                str(token_file),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "server.log", "ab"),  # noqa: SIM115
        )
        for _ in range(300):
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/openapi.json", timeout=1).status_code == 200:
                    return proc
            time.sleep(0.1)
        raise AssertionError("server did not start: " + (tmp_path / "server.log").read_text()[-2000:])

    server = start_server()
    manager = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "metasched",
            "sites",
            "run",
            "--config",
            str(tmp_path / "sites.toml"),
            "--db",
            db,
            "--server",
            url,
            "--token-file",
            str(token_file),
            "--lease",
            str(lease),
            "--interval",
            "0.5",
            "--until-idle",
            "-v",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "manager.log", "ab"),  # noqa: SIM115
    )
    killed: dict[str, str] = {}
    t0 = time.time()
    try:
        while manager.poll() is None and time.time() - t0 < 300:
            time.sleep(0.5)
            done = store.counts().get("done", 0)
            running = [j for j in store.jobs(states=["running"]) if j["placeholder_id"]]
            phs = {p["id"]: p for p in store.placeholders(active_only=True)}
            by_site: dict[str, list[str]] = defaultdict(list)
            for j in running:
                if j["placeholder_id"] in phs:
                    by_site[j["site"]].append(j["placeholder_id"])
            # A batch cancel of a placeholder running a job, at whichever site of that batch system has one
            # (on a loaded machine one site may have none running at that moment).
            slurm = by_site["slurmB"] or by_site["slurmA"]
            if "scancel" not in killed and done > 20 and slurm:
                victim = phs[slurm[0]]
                subprocess.run(["scancel", victim["batch_id"]], check=True, timeout=30)
                killed["scancel"] = victim["id"]
            sge = by_site["sgeB"] or by_site["sgeA"]
            if "qdel" not in killed and done > 40 and sge:
                victim = phs[sge[0]]
                subprocess.run(["qdel", victim["batch_id"]], check=True, capture_output=True, timeout=30)
                killed["qdel"] = victim["id"]
            if "kill9" not in killed and done > 60:
                for site in ("slurmA", "sgeA", "slurmB", "sgeB"):
                    pids = [p for ph in by_site[site] for p in _pids_of_placeholder(ph)]
                    if pids:
                        os.kill(pids[0], signal.SIGKILL)
                        killed["kill9"] = f"{site}:{pids[0]}"
                        break
            if "server" not in killed and done > 80:
                server.send_signal(signal.SIGKILL)
                server.wait(timeout=30)
                time.sleep(1.0)
                server = start_server()
                killed["server"] = "restarted"
        assert manager.poll() is not None, "workflow did not finish in 300 s: " + str(store.counts())
        counts = store.counts()
        if set(counts) - {"done", "ready"}:  # the manager stopped before the workflow ended: say why
            log_tail = (tmp_path / "manager.log").read_text()[-3000:]
            raise AssertionError(
                f"site manager exited with code {manager.returncode} before the workflow ended "
                f"(jobs: {counts}; faults injected so far: {killed}); its log ends:\n{log_tail}"
            )
    finally:
        for proc in (manager, server):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=20)
            if proc.poll() is None:
                proc.kill()
    elapsed = time.time() - t0
    assert set(killed) == {"scancel", "qdel", "kill9", "server"}, killed

    jobs = {j["name"]: j for j in store.jobs()}
    assert {j["state"] for j in jobs.values()} == {"done"}, store.counts()
    events = store.events()
    accepted: dict[int, int] = defaultdict(int)
    for e in events:
        if e["kind"] == "done":
            accepted[e["job_id"]] += 1
    assert all(accepted[j["id"]] == 1 for j in jobs.values())  # one accepted completion each

    lines = ledger.read_text().splitlines()
    assert not [ln for ln in lines if ln.startswith("OVERLAP")], "two runs of one job at once"
    starts: dict[str, list[float]] = defaultdict(list)
    ends: dict[tuple[str, int], list[float]] = defaultdict(list)
    for ln in lines:
        kind, name, attempt, _site, at = ln.split()
        if kind == "start":
            starts[name].append(float(at))
        else:
            ends[(name, int(attempt))].append(float(at))
    for name, j in jobs.items():
        assert len(ends[(name, j["attempts"])]) == 1, f"{name}: accepted attempt ended {ends[(name, j['attempts'])]}"
    by_id = {j["id"]: j for j in jobs.values()}
    deps = {s.name: s.after for s in specs}
    for name, after in deps.items():
        for dep in after:
            dep_end = ends[(dep, jobs[dep]["attempts"])][0]
            assert min(starts[name]) >= dep_end, f"{name} started before {dep} ended"
    sites_used = {j["site"] for j in jobs.values()}
    assert {"slurmA", "slurmB", "sgeA", "sgeB"} & sites_used >= {"slurmB", "sgeB"}
    assert any(s.startswith("slurm") for s in sites_used) and any(s.startswith("sge") for s in sites_used)
    # the throttle moved the placeholder targets
    targets: dict[str, set[str]] = defaultdict(set)
    for e in events:
        if e["kind"] == "site_target":
            targets[e["site"]].add(e["detail"])
    assert any(len(v) > 1 for v in targets.values()), targets
    lost = {by_id[e["job_id"]]["name"] for e in events if e["kind"] == "lease_lost"}
    print(
        f"\nlattice of {len(jobs)} jobs in {elapsed:.1f}s; kills: {killed}; jobs requeued after lost leases: "
        f"{len(lost)} (most attempts of a job: {max(j['attempts'] for j in jobs.values())}); "
        f"placeholder targets: { {k: sorted(v) for k, v in targets.items()} }"
    )
    store.close()
