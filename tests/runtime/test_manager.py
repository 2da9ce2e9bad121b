"""The site manager with the default local site (no cluster): the newcomer's path, and site configs."""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

import pytest

from metasched.runtime.batch import BatchError
from metasched.runtime.batch.gridengine import GridEngineAdapter
from metasched.runtime.batch.pbs import PbsAdapter
from metasched.runtime.batch.slurm import SlurmAdapter
from metasched.runtime.manager import SiteConfig, SiteManager, load_sites
from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.states import PlaceholderState
from metasched.runtime.metaqueue.store import JobSpec, Store
from tests.runtime.conftest import have

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_default_is_one_local_site_sized_to_this_machine() -> None:
    (site,) = load_sites(None)
    assert (site.name, site.adapter, site.limit) == ("local", "local", os.cpu_count())


def test_site_config_errors_name_the_problem(tmp_path: Path) -> None:
    f = tmp_path / "sites.toml"
    f.write_text('[sites.a]\nadapter = "lsf"\n')
    with pytest.raises(StoreError, match="site 'a': unknown adapter 'lsf'; known: gridengine, local, pbs, slurm"):
        load_sites(f)
    f.write_text('[sites.a]\nadapter = "slurm"\nqueues = "x"\n')
    with pytest.raises(StoreError, match="unknown key\\(s\\) queues"):
        load_sites(f)
    f.write_text('[sites.a]\nadapter = "slurm"\nqueue = "short"\nwall_time = "30m"\nlimit = 8\nlicences = {m = 2}\n')
    (a,) = load_sites(f)
    assert (a.queue, a.wall_time_s, a.limit, a.licences) == ("short", 1800.0, 8, {"m": 2})


def test_manager_runs_workflow_on_local_placeholders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", SRC)
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=10)
    store.submit(
        [
            JobSpec("true", name="a"),
            JobSpec("true", name="b", after=["a"]),
            JobSpec("exit 1", name="c"),
            JobSpec("true", name="d", after=["c"]),
        ]
    )
    cfg = SiteConfig(name="local", adapter="local", limit=2, initial=1, increase_below_s=60, idle_cancel_s=0)
    manager = SiteManager(store, [cfg], db_url=db, workdir=tmp_path / "ph")
    manager.run(interval_s=0.2, until_idle=True, max_s=120)
    assert {j["name"]: j["state"] for j in store.jobs()} == {"a": "done", "b": "done", "c": "failed", "d": "dep_failed"}
    phs = store.placeholders("local")
    assert phs and all(p["state"] not in ("submitted", "queued", "running") for p in phs)
    assert any(p["decision"] == "increase" for p in phs)  # local queue wait is short: more placeholders


def test_a_site_that_is_down_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PYTHONPATH", SRC)
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for cmd in ("sbatch", "squeue", "sacct", "scancel"):  # a Slurm whose controller is down
        (bindir / cmd).write_text(
            "#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller' >&2\nexit 1\n"
        )
        (bindir / cmd).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=10)
    store.submit([JobSpec("true", name=f"j{i}") for i in range(4)])
    down = SiteConfig(name="cluster", adapter="slurm", queue="x", limit=2)
    local = SiteConfig(name="local", adapter="local", limit=1, idle_cancel_s=0)
    manager = SiteManager(store, [down, local], db_url=db, workdir=tmp_path / "ph")
    manager.run(interval_s=0.2, until_idle=True, max_s=120)
    assert {j["state"] for j in store.jobs()} == {"done"}
    assert {j["site"] for j in store.jobs()} == {"local"}
    assert store.placeholders("cluster") == []
    assert "site cluster unavailable" in caplog.text and "Unable to contact slurm controller" in caplog.text


# --- a broken site (issue 33): back off, mark it down with the reason, keep the others going, stop when stranded


def _broken_slurm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str) -> None:
    """The real ``sbatch`` of the testbed with a SLURM_CONF it cannot use: ``garbage`` (refused at once) or
    ``missing`` (sbatch retries for a minute: our command timeout ends each try)."""
    if not have("sbatch", "squeue", "scancel"):
        pytest.skip("Slurm client commands not installed (scripts/testbed/up provides them)")
    conf = tmp_path / "slurm.conf"
    if how == "garbage":
        conf.write_text("this is not a slurm.conf\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))


def _scripts(workdir: Path) -> list[Path]:
    return sorted(workdir.rglob("*.sh"))


def test_broken_site_backs_off_and_is_marked_down_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Rounds every second for 120 s of a site whose sbatch always fails: tries at 0, 2 and 6 s (back-off 2, 4),
    down after the third failure, then one try per DOWN_RETRY_S (300 s): 3 tries, not 120, and no script left."""
    _broken_slurm(monkeypatch, tmp_path, "garbage")
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=10)
    store.submit([JobSpec("true", name=f"j{i}") for i in range(2)])
    cfg = SiteConfig(name="cluster", adapter="slurm", queue="siteA", limit=2, initial=2)
    manager = SiteManager(store, [cfg], db_url="sqlite://", workdir=tmp_path / "ph")
    assert (manager.BACKOFF_BASE_S, manager.DOWN_AFTER, manager.DOWN_RETRY_S) == (2.0, 3, 300.0)
    t0 = 1_000_000.0
    states = []
    for k in range(120):
        manager.tick(now=t0 + k)
        states.append(manager.health()["cluster"]["state"])
    tries = [r for r in caplog.records if "site cluster unavailable" in r.getMessage()]
    assert len(tries) == 3, [r.getMessage() for r in tries]
    assert states[:6] == ["up"] * 6 and states[6:] == ["down"] * 114  # down from the third failure (t = 6 s)
    (row,) = store.sites()
    reach = row["config"]["reach"]
    assert reach["state"] == "down" and reach["since"] == t0 + 6
    assert "sbatch" in reach["error"] and "slurm.conf" in reach["error"]
    assert _scripts(tmp_path / "ph") == []  # the script of each failed try is removed
    manager.tick(now=t0 + 6 + 300)  # a down site is retried rarely
    assert len([r for r in caplog.records if "site cluster unavailable" in r.getMessage()]) == 4
    assert store.placeholders("cluster") == []
    store.close()


def test_until_idle_ends_when_the_only_work_left_needs_a_down_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _broken_slurm(monkeypatch, tmp_path, "garbage")
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=10)
    store.submit([JobSpec("true", name="a"), JobSpec("true", name="b", after=["a"])])
    cfg = SiteConfig(name="cluster", adapter="slurm", queue="siteA", limit=1)
    manager = SiteManager(store, [cfg], db_url="sqlite://", workdir=tmp_path / "ph", backoff_base_s=0.05)
    why = manager.run(interval_s=0.05, until_idle=True, max_s=60)
    assert why.startswith("2 job(s) queued but every site is down (cluster: ") and "sbatch" in why
    assert {j["state"] for j in store.jobs()} == {"queued"}  # nothing lost, nothing marked failed
    assert _scripts(tmp_path / "ph") == []
    store.close()


@pytest.mark.parametrize("how", ["garbage", "missing"])
def test_a_broken_real_slurm_site_beside_a_working_local_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The local site runs every job while the Slurm site fails (refused at once, or sbatch hanging until our
    command timeout); the run ends, the Slurm site is down with sbatch's reason and left no scripts behind."""
    _broken_slurm(monkeypatch, tmp_path, how)
    monkeypatch.setenv("PYTHONPATH", SRC)
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=10)
    store.submit([JobSpec("sleep 1", name=f"j{i}") for i in range(8)])
    broken = SiteConfig(name="cluster", adapter="slurm", queue="siteA", limit=2, command_timeout_s=2)
    local = SiteConfig(name="local", adapter="local", limit=1, idle_cancel_s=0)
    manager = SiteManager(store, [broken, local], db_url=db, workdir=tmp_path / "ph", backoff_base_s=0.1)
    why = manager.run(interval_s=0.1, until_idle=True, max_s=120)
    assert why == "no job queued or running"
    assert {(j["state"], j["site"]) for j in store.jobs()} == {("done", "local")}
    assert store.placeholders("cluster") == [] and _scripts(tmp_path / "ph" / "cluster") == []
    health = manager.health()
    assert health["local"]["state"] == "up"
    assert health["cluster"]["state"] == "down" and "sbatch" in str(health["cluster"]["last_error"])
    store.close()


def test_a_failing_squeue_is_an_error_not_vanished_placeholders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """squeue answering "Invalid job id" means Slurm forgot the job (sacct then decides); squeue failing for any
    other reason means the states are unknown: the placeholders must not be declared vanished (and replaced)."""
    if not (os.environ.get("SLURM_CONF") and have("squeue", "sacct")):
        pytest.skip("Slurm not available (scripts/testbed/up starts it; SLURM_CONF unset)")
    adapter = SlurmAdapter(queue="siteA", workdir=tmp_path)
    assert adapter.poll(["999999"]) == {"999999": PlaceholderState.VANISHED}
    _broken_slurm(monkeypatch, tmp_path, "garbage")
    with pytest.raises(BatchError, match="squeue exited 1: squeue: error: Parse error"):
        adapter.poll(["999999"])


def test_a_failing_qstat_is_an_error_not_vanished_placeholders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (os.environ.get("SGE_ROOT") and have("qstat", "qacct")):
        pytest.skip("Grid Engine not available (scripts/testbed/up starts it; SGE_ROOT unset)")
    adapter = GridEngineAdapter(queue="siteA.q", workdir=tmp_path)
    assert adapter.poll(["999999"]) == {"999999": PlaceholderState.VANISHED}
    monkeypatch.setenv("SGE_CELL", "no-such-cell")
    with pytest.raises(BatchError, match="qstat exited 1: error: cell directory"):
        adapter.poll(["999999"])


@pytest.mark.parametrize(
    ("stderr", "code", "vanished"),
    [("qstat: Unknown Job Id 7.server", 153, True), ("Connection refused\nqstat: cannot connect to server", 2, False)],
)
def test_pbs_poll_tells_a_forgotten_job_from_a_failing_qstat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stderr: str, code: int, vanished: bool
) -> None:
    """No PBS in the testbed: a fake ``qstat`` giving the two answers a real one gives (parsing only)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "qstat").write_text(f"#!/bin/sh\nprintf '%s\\n' {shlex.quote(stderr)} >&2\nexit {code}\n")
    (bindir / "qstat").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    adapter = PbsAdapter(queue="q", workdir=tmp_path)
    if vanished:
        assert adapter.poll(["7.server"]) == {"7.server": PlaceholderState.VANISHED}
    else:
        with pytest.raises(BatchError, match="qstat exited 2: Connection refused"):
            adapter.poll(["7.server"])


def test_a_hanging_site_holds_only_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Sites are independent (issue 34): while the Slurm site's real sbatch hangs (SLURM_CONF missing: it retries
    for about a minute), the local site's rounds go on and run every job. When the last job is done the
    Slurm site's first round has not even failed yet (sequential rounds would have waited for it first), and it
    still fails, backs off and is reported as before once sbatch gives up."""
    _broken_slurm(monkeypatch, tmp_path, "missing")
    monkeypatch.setenv("PYTHONPATH", SRC)
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=10)
    store.submit([JobSpec("true", name=f"j{i}") for i in range(4)])
    hung = SiteConfig(name="cluster", adapter="slurm", queue="siteA", limit=1, command_timeout_s=180)
    local = SiteConfig(name="local", adapter="local", limit=1, idle_cancel_s=0)
    manager = SiteManager(store, [hung, local], db_url=db, workdir=tmp_path / "ph")
    try:
        deadline = time.monotonic() + 170  # (a bound against hanging, under the sbatch's time-out)
        while {j["state"] for j in store.jobs()} != {"done"} and time.monotonic() < deadline:
            manager.tick(wait_s=0.2)
            time.sleep(0.1)
        assert {(j["state"], j["site"]) for j in store.jobs()} == {("done", "local")}
        assert "site cluster unavailable" not in caplog.text  # its first round is still in its sbatch
        assert not manager.wait_rounds(0)
        assert manager.wait_rounds(400)  # sbatch gives up (or our time-out ends it): the round ends
        manager.tick(wait_s=0)  # its outcome is taken in
        assert "site cluster unavailable" in caplog.text and manager.health()["cluster"]["last_error"]
        assert store.placeholders("cluster") == []
    finally:
        manager.shutdown()
        manager.close()
        store.close()
