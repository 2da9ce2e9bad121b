"""``metasched sites run`` as a user runs it (issue 33): a real Slurm client with a SLURM_CONF it cannot use
beside a working local site. It ends, says what happened (progress on stderr, a summary per site), exits 1
when a job failed or was left undone, and ``metasched status`` shows the site that is down and why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metasched.runtime.metaqueue.store import JobSpec, Store
from tests.runtime.conftest import have

SRC = str(Path(__file__).resolve().parents[2] / "src")
BROKEN = '[sites.cluster]\nadapter = "slurm"\nqueue = "siteA"\nlimit = 2\ncommand_timeout = "5s"\n'
LOCAL = '[sites.local]\nadapter = "local"\nlimit = 1\nidle_cancel = 0\n'


def _metasched(tmp_path: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    env["SLURM_CONF"] = str(tmp_path / "slurm.conf")
    return subprocess.run(
        [sys.executable, "-m", "metasched", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, str]:
    if not have("sbatch", "squeue", "scancel"):
        pytest.skip("Slurm client commands not installed (scripts/testbed/up provides them)")
    (tmp_path / "slurm.conf").write_text("this is not a slurm.conf\n")
    return tmp_path, f"sqlite:///{tmp_path / 'q.db'}"


def test_failed_job_and_down_site_give_exit_1_a_summary_and_progress(setup: tuple[Path, str]) -> None:
    tmp_path, db = setup
    (tmp_path / "sites.toml").write_text(BROKEN + LOCAL)
    store = Store.open(db)
    store.submit([JobSpec("exit 1", name="fails")] + [JobSpec("sleep 1", name=f"ok{i}") for i in range(8)])
    old = store.submit([JobSpec("exit 3", name="yesterday")])
    store.cancel([str(old[0])])  # ended before this run: not its business
    args = ["--config", str(tmp_path / "sites.toml"), "--db", db, "--until-idle", "--interval", "0.2"]
    res = _metasched(tmp_path, "sites", "run", *args, "--progress-every", "0.5")
    assert res.returncode == 1, res.stderr
    out = res.stdout.splitlines()
    assert out[0] == "sites run: no job queued or running"
    assert out[1] == "jobs of this run: done 8, failed 1, left 0"
    local = next(ln for ln in out if ln.strip().startswith("local"))
    assert "done 8" in local and "failed 1" in local and local.rstrip().endswith("up")
    cluster = next(ln for ln in out if ln.strip().startswith("cluster"))
    assert "no jobs" in cluster and "DOWN since" in cluster and "sbatch" in cluster
    progress = [ln for ln in res.stderr.splitlines() if ln.startswith("sites run: jobs")]
    assert progress and "cluster down" in progress[-1], res.stderr  # plain lines: stderr is not a terminal
    assert "error: 1 job(s) failed and 0 left undone" in res.stderr
    assert not list((tmp_path / "home" / "placeholders" / "cluster").glob("*.sh"))

    status = _metasched(tmp_path, "status", "--db", db, timeout=60)
    shown = " ".join(status.stdout.split())  # as read, whatever the table's wrapping
    assert status.returncode == 0 and "site cluster is DOWN: since" in shown
    assert "sbatch: error: Parse error in file" in shown
    listing = _metasched(tmp_path, "sites", "list", "--db", db, timeout=60)
    assert "down" in listing.stdout
    store.close()


def test_work_only_a_down_site_could_run_ends_the_run_with_exit_1(setup: tuple[Path, str]) -> None:
    tmp_path, db = setup
    (tmp_path / "sites.toml").write_text(BROKEN)
    store = Store.open(db)
    store.submit([JobSpec("true", name="a"), JobSpec("true", name="b", after=["a"])])
    args = ["--config", str(tmp_path / "sites.toml"), "--db", db, "--until-idle", "--interval", "0.2"]
    res = _metasched(tmp_path, "sites", "run", *args)
    assert res.returncode == 1, res.stderr
    assert res.stdout.startswith("sites run: 2 job(s) queued but every site is down (cluster: ")
    assert "jobs of this run: done 0, failed 0, left 2" in res.stdout
    assert {j["state"] for j in store.jobs()} == {"queued"}
    store.close()


def test_all_done_exits_0(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    (tmp_path / "sites.toml").write_text(LOCAL)
    store = Store.open(db)
    store.submit([JobSpec("true", name=f"j{i}") for i in range(3)])
    args = ["--config", str(tmp_path / "sites.toml"), "--db", db, "--until-idle", "--interval", "0.2"]
    res = _metasched(tmp_path, "sites", "run", *args)
    assert res.returncode == 0, res.stderr
    assert "jobs of this run: done 3, failed 0, left 0" in res.stdout
    store.close()
