"""Parallel jobs (issue 36, item 5; seed 003 ran Pthreads, MPI and sequential jobs through the same placeholders).

A job asks ``--tasks N`` (MPI ranks) and ``--nodes K`` besides ``--cpus`` (per task); a placeholder is sized
cpus x nodes in its batch request and starts such a job with the site's launcher; a job never lands in a
placeholder too small for it (the claim's fit check). Live: a real OpenMPI program of 2 ranks through
placeholders on the Slurm and Grid Engine testbeds (and on local placeholders).
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from metasched.model.job import Job
from metasched.policy.claim import FcfsClaim, FreeResources, fits_shape
from metasched.runtime.batch.base import PlaceholderSpec
from metasched.runtime.batch.gridengine import GridEngineAdapter
from metasched.runtime.batch.pbs import PbsAdapter
from metasched.runtime.batch.slurm import SlurmAdapter
from metasched.runtime.manager import SiteConfig, SiteManager, load_sites
from metasched.runtime.metaqueue.records import ClaimedJob, StoreError
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.runtime.metaqueue.workflow import read_workflow, submit_spec
from metasched.runtime.placeholder.launcher import Launcher, LauncherError, hosts
from tests.runtime.conftest import have

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: The testbed runs as root; OpenMPI refuses root unless told.
ROOT_OK = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
HELLO_C = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d\n", rank, size);
    MPI_Finalize();
    return 0;
}
"""


def _job(job_id: int, tasks: int, cpus: int, nodes: int) -> Job:
    attrs: dict[str, object] = {"mem_mb": 0, "licences": {}}
    if tasks > 1 or nodes > 1:
        attrs.update(tasks=tasks, nodes=nodes, cpus_per_task=cpus)
    return Job(job_id, 0.0, 0.0, 0.0, tasks * cpus, attrs=attrs)


def _placeable(tasks: int, cpus: int, nodes: int, ph_nodes: int, node_cpus: int) -> bool:
    """Oracle by enumeration: some way to put ``tasks`` tasks of ``cpus`` cpus on ``nodes`` distinct nodes of the
    placeholder, each node at least one task and at most ``node_cpus`` cpus."""
    if nodes > ph_nodes or nodes > tasks:
        return False
    for cut in itertools.combinations(range(1, tasks), nodes - 1):
        parts = [b - a for a, b in zip((0, *cut), (*cut, tasks), strict=True)]
        if max(parts) * cpus <= node_cpus:
            return True
    return False


@given(
    tasks=st.integers(1, 8),
    cpus=st.integers(1, 4),
    nodes=st.integers(1, 4),
    ph_nodes=st.integers(1, 4),
    node_cpus=st.integers(1, 8),
)
def test_the_fit_check_places_a_job_only_where_its_tasks_fit(
    tasks: int, cpus: int, nodes: int, ph_nodes: int, node_cpus: int
) -> None:
    """Invariant of fits_shape and the claim: a job goes to an idle placeholder exactly when its tasks can be put on
    its nodes there (checked against an enumeration of every split of the tasks over the nodes)."""
    if nodes > tasks:
        return  # refused at submission (test_nodes_beyond_tasks_are_refused...)
    job = _job(1, tasks, cpus, nodes)
    free = FreeResources(ph_nodes * node_cpus, nodes=ph_nodes, node_cpus=node_cpus if ph_nodes > 1 else None)
    expected = _placeable(tasks, cpus, nodes, ph_nodes, node_cpus)
    assert FcfsClaim().select([job], "s", free, 0.0, limit=ph_nodes * node_cpus) == ([1] if expected else [])
    if ph_nodes > 1:
        assert fits_shape(job, ph_nodes, node_cpus) == expected


def test_fit_check_hand_worked_cases() -> None:
    # 2 ranks x 1 cpu on a one-node placeholder of 2 cpus: fits; of 1 cpu: no.
    assert FcfsClaim().select([_job(1, 2, 1, 1)], "s", FreeResources(2), 0.0, limit=2) == [1]
    assert FcfsClaim().select([_job(1, 2, 1, 1)], "s", FreeResources(1), 0.0, limit=2) == []
    # 2 nodes asked of a one-node placeholder, however many cpus: no.
    assert FcfsClaim().select([_job(1, 4, 1, 2)], "s", FreeResources(64), 0.0, limit=8) == []
    # 3 ranks x 2 cpus over 2 nodes of 2 cpus: the busier node needs 4 cpus: no; nodes of 4: yes.
    assert not fits_shape(_job(1, 3, 2, 2), 2, 2)
    assert fits_shape(_job(1, 3, 2, 2), 2, 4)
    # A busy placeholder of several nodes (0 free nodes) takes nothing, not even a sequential job.
    assert FcfsClaim().select([_job(1, 1, 1, 1)], "s", FreeResources(4, nodes=0, node_cpus=2), 0.0) == []


def test_the_store_hands_a_parallel_job_only_to_a_placeholder_big_enough(store: Store) -> None:
    big, seq = store.submit(
        [JobSpec("mpi-app", name="mpi", tasks=4, cpus=1, nodes=2), JobSpec("seq", name="seq", cpus=1)]
    )
    # One node of 8 cpus: the 2-node job never lands there; the sequential one does.
    res = store.claim("s", "ph-small", FreeResources(8), limit=8)
    assert [j.job_id for j in res.jobs] == [seq]
    assert store.claim("s", "ph-small", FreeResources(7), limit=8).action == "wait"
    # Two nodes of 1 cpu each: 4 ranks over 2 nodes need 2 cpus per node: still not.
    assert store.claim("s", "ph-thin", FreeResources(2, nodes=2, node_cpus=1), limit=2).action == "wait"
    # Two nodes of 2 cpus: yes, with its shape for the launcher.
    (job,) = store.claim("s", "ph-big", FreeResources(4, nodes=2, node_cpus=2), limit=4).jobs
    assert (job.job_id, job.tasks, job.nodes, job.cpus, job.total_cpus) == (big, 4, 2, 1, 4)
    (row,) = [j for j in store.jobs() if j["id"] == big]
    assert (row["tasks"], row["nodes"]) == (4, 2)


def test_a_placeholder_of_several_nodes_takes_one_job_at_a_time(store: Store) -> None:
    store.submit([JobSpec("true", name=f"j{i}") for i in range(4)])
    res = store.claim("s", "ph", FreeResources(8, nodes=2, node_cpus=4), limit=8)
    assert len(res.jobs) == 1


def test_submit_options_and_workflow_keys(tmp_path: Path) -> None:
    spec = submit_spec("./a.out", "/w", tasks=4, nodes=2, cpus=2)
    assert (spec.tasks, spec.nodes, spec.cpus, spec.total_cpus) == (4, 2, 2, 8)
    with pytest.raises(StoreError, match=r"^--tasks: tasks must be a whole number"):
        submit_spec("x", "/w", tasks=0)
    with pytest.raises(StoreError, match=r"^--nodes: 3 nodes for 2 task"):
        submit_spec("x", "/w", tasks=2, nodes=3)
    wf = tmp_path / "wf.yaml"
    wf.write_text("- name: sort\n  command: ./psrs\n  tasks: 8\n  nodes: 2\n- name: seq\n  command: ./qsort\n")
    mpi, seq = read_workflow(wf)
    assert (mpi.tasks, mpi.nodes, seq.tasks, seq.nodes) == (8, 2, 1, 1)
    wf.write_text("- name: sort\n  command: ./psrs\n  tasks: 2\n  nodes: 4\n")
    with pytest.raises(StoreError, match=r"jobs\[0\]\.nodes: 4 nodes for 2 task"):
        read_workflow(wf)
    wf.write_text("- name: sort\n  command: ./psrs\n  tasks: two\n")
    with pytest.raises(StoreError, match=r"jobs\[0\]\.tasks: tasks must be a whole number"):
        read_workflow(wf)


def test_cli_submit_tasks_and_nodes(tmp_path: Path) -> None:
    from metasched.cli.main import app

    db = f"sqlite:///{tmp_path / 'q.db'}"
    runner = CliRunner()
    res = runner.invoke(app, ["submit", "--db", db, "--tasks", "2", "--nodes", "2", "--", "./hello"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["submit", "--db", db, "--tasks", "1", "--nodes", "2", "--", "./hello"])
    assert res.exit_code == 2 and "error: --nodes: 2 nodes for 1 task(s)" in res.output
    store = Store.open(db)
    assert [(j["tasks"], j["nodes"]) for j in store.jobs()] == [(2, 2)]
    store.close()


def test_placeholders_are_sized_cpus_x_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, answer in {"sbatch": "4242", "qsub": "77.server"}.items():
        (bindir / name).write_text(f'#!/bin/sh\necho "{answer}"\n')
        (bindir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    spec = PlaceholderSpec("ph", ["metasched", "placeholder"], cpus=4, nodes=2)
    SlurmAdapter(workdir=tmp_path / "s").submit(spec)
    script = (tmp_path / "s" / "ph.sh").read_text()
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --cpus-per-task=1\n" in script
    sge = GridEngineAdapter(workdir=tmp_path / "g")
    sge.pe = "mpi"
    sge.submit(spec)
    assert "#$ -pe mpi 8\n" in (tmp_path / "g" / "ph.sh").read_text()
    PbsAdapter(workdir=tmp_path / "p").submit(spec)
    assert "#PBS -l nodes=2:ppn=4\n" in (tmp_path / "p" / "ph.sh").read_text()


def test_launcher_templates_and_host_lists(tmp_path: Path) -> None:
    job = ClaimedJob(1, 1, None, "./a", "", {}, 2, 0, 0.0, 0.0, tasks=5, nodes=2)
    assert Launcher("mpirun -np {tasks} --hostfile {hostfile} -x A").argv(job, "/p q/h")[1:] == [
        "-np",
        "5",
        "--hostfile",
        "/p q/h",
        "-x",
        "A",
    ]
    assert Launcher("srun -N {nodes} -n {tasks} -c {cpus} --ntasks-per-node={tasks_per_node}").argv(job, "h")[1:] == [
        "-N",
        "2",
        "-n",
        "5",
        "-c",
        "2",
        "--ntasks-per-node=3",
    ]
    assert Launcher("mpirun --hostfile {hostfile}").needs_hostfile and not Launcher("srun -n {tasks}").needs_hostfile
    with pytest.raises(LauncherError, match=r"unknown field \{ranks\}; known: tasks, nodes"):
        Launcher("mpirun -np {ranks}")
    with pytest.raises(LauncherError, match="launcher is empty"):
        Launcher("  ")
    pe = tmp_path / "pe_hostfile"
    pe.write_text("n1.cluster 4 all.q@n1 UNDEFINED\nn2.cluster 2 all.q@n2 UNDEFINED\n")
    assert hosts({"PE_HOSTFILE": str(pe)}, 1, 1) == [("n1.cluster", 4), ("n2.cluster", 2)]
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("a\na\nb\na\n")
    assert hosts({"PBS_NODEFILE": str(nodefile)}, 1, 1) == [("a", 3), ("b", 1)]
    assert hosts({}, 3, 2)[0][1] == 6


def test_site_keys_for_parallel_jobs(tmp_path: Path) -> None:
    f = tmp_path / "sites.toml"
    f.write_text(
        '[sites.a]\nadapter = "gridengine"\ncpus = 4\nnodes = 2\npe = "mpi"\nlauncher = "mpirun -np {tasks}"\n'
    )
    (a,) = load_sites(f)
    assert (a.cpus, a.nodes, a.pe, a.launcher) == (4, 2, "mpi", "mpirun -np {tasks}")
    f.write_text('[sites.a]\nadapter = "slurm"\nlauncher = "srun -n {ntasks}"\n')
    with pytest.raises(StoreError, match=r"site 'a': launcher 'srun -n \{ntasks\}': unknown field \{ntasks\}"):
        load_sites(f)
    f.write_text('[sites.a]\nadapter = "slurm"\npe = "smp"\n')
    with pytest.raises(StoreError, match=r"site 'a': pe .* needs adapter 'gridengine'"):
        load_sites(f)
    f.write_text('[sites.a]\nadapter = "slurm"\nnodes = 0\n')
    with pytest.raises(StoreError, match="site 'a': cpus and nodes must be >= 1"):
        load_sites(f)


# ------------------------------------------------------------------------------------------------ live


def _mpi_program(tmp_path: Path) -> Path:
    if not have("mpicc", "mpirun"):
        pytest.skip("OpenMPI not installed (scripts/testbed/mpi.sh installs openmpi-bin and libopenmpi-dev)")
    src = tmp_path / "hello.c"
    src.write_text(HELLO_C)
    exe = tmp_path / "hello"
    subprocess.run(["mpicc", "-o", str(exe), str(src)], check=True, timeout=120)
    return exe


def _run_sites(tmp_path: Path, cfg: SiteConfig, specs: list[JobSpec], monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    monkeypatch.setenv("PYTHONPATH", SRC)
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=30)
    store.submit(specs)
    manager = SiteManager(store, [cfg], db_url=db, workdir=tmp_path / "ph")
    try:
        manager.run(interval_s=0.5, until_idle=True, max_s=240)
    finally:
        manager.close()
    jobs = store.jobs()
    store.close()
    return jobs


def _out(job: dict) -> str:
    text = Path(job["stdout_path"]).read_text() if job["stdout_path"] else ""
    err = Path(job["stderr_path"]).read_text() if job["stderr_path"] else ""
    return text + ("\n[stderr]\n" + err if err else "")


def _assert_two_ranks(job: dict) -> None:
    out = _out(job)
    assert job["state"] == "done", out
    assert sorted(line for line in out.splitlines() if line.startswith("rank ")) == ["rank 0 of 2", "rank 1 of 2"], out


@pytest.mark.live
@pytest.mark.timeout(300)
def test_mpi_job_of_two_ranks_on_local_placeholders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = _mpi_program(tmp_path)
    cfg = SiteConfig(name="local", adapter="local", cpus=2, limit=1, initial=1, idle_cancel_s=0, env=ROOT_OK)
    jobs = _run_sites(
        tmp_path, cfg, [JobSpec(str(exe), name="mpi", tasks=2), JobSpec("echo seq", name="seq")], monkeypatch
    )
    by_name = {j["name"]: j for j in jobs}
    _assert_two_ranks(by_name["mpi"])
    assert by_name["seq"]["state"] == "done"


def _require_slurm() -> None:
    if not (os.environ.get("SLURM_CONF") and have("sbatch", "squeue", "srun")):
        pytest.skip("Slurm not available (scripts/testbed/up starts it as root; SLURM_CONF unset)")


def _require_sge() -> str:
    if not (os.environ.get("SGE_ROOT") and have("qsub", "qstat", "qconf")):
        pytest.skip("Grid Engine not available (scripts/testbed/up starts it as root; SGE_ROOT unset)")
    pes = subprocess.run(["qconf", "-spl"], capture_output=True, text=True, timeout=30).stdout.split()
    assert "smp" in pes, f"the Grid Engine testbed has no 'smp' parallel environment (scripts/testbed/sge.sh): {pes}"
    return (os.environ.get("METASCHED_TESTBED_SGE_QUEUES") or "siteA.q").split()[0]


@pytest.mark.live
@pytest.mark.timeout(300)
def test_mpi_job_of_two_ranks_on_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The placeholder asks Slurm for 2 one-cpu tasks; OpenMPI's mpirun (this site's launcher) runs 2 ranks in that
    allocation. Beside it, a 2-task job through the default launcher, srun, which starts one copy per task."""
    _require_slurm()
    exe = _mpi_program(tmp_path)
    cfg = SiteConfig(
        name="slurmA",
        adapter="slurm",
        queue="siteA",
        cpus=2,
        limit=1,
        initial=1,
        idle_cancel_s=0,
        wall_time_s=600,
        env=ROOT_OK,
    )
    mpi_cfg = SiteConfig.from_mapping(
        "slurmA",
        {
            "adapter": "slurm",
            "queue": "siteA",
            "cpus": 2,
            "limit": 1,
            "idle_cancel": 0,
            "wall_time": 600,
            "env": ROOT_OK,
            "launcher": "mpirun -np {tasks} --hostfile {hostfile}",
        },
    )
    jobs = _run_sites(tmp_path, mpi_cfg, [JobSpec(str(exe), name="mpi", tasks=2)], monkeypatch)
    _assert_two_ranks(jobs[0])
    # A database of its own: deleting the first one's file would leave its -wal/-shm (and the first run's
    # placeholder may still be leaving Slurm), which SQLite then reads as a "disk I/O error".
    second = tmp_path / "srun"
    second.mkdir()
    jobs = _run_sites(second, cfg, [JobSpec('echo "task $SLURM_PROCID"', name="srun", tasks=2)], monkeypatch)
    out = _out(jobs[0])
    assert jobs[0]["state"] == "done", out
    assert sorted(line for line in out.splitlines() if line.startswith("task ")) == ["task 0", "task 1"], out


@pytest.mark.live
@pytest.mark.timeout(300)
def test_mpi_job_of_two_ranks_on_grid_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The placeholder asks ``-pe smp 2``; the default launcher runs mpirun on $PE_HOSTFILE's hosts."""
    queue = _require_sge()
    exe = _mpi_program(tmp_path)
    cfg = SiteConfig(
        name="sgeA",
        adapter="gridengine",
        queue=queue,
        cpus=2,
        limit=1,
        initial=1,
        idle_cancel_s=0,
        wall_time_s=600,
        env=ROOT_OK,
    )
    jobs = _run_sites(tmp_path, cfg, [JobSpec(str(exe), name="mpi", tasks=2)], monkeypatch)
    _assert_two_ranks(jobs[0])
    assert math.isfinite(jobs[0]["end_at"])


@pytest.mark.live
@pytest.mark.timeout(300)
def test_a_two_node_job_in_a_two_node_slurm_placeholder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A placeholder of 2 nodes x 2 cpus (sbatch --nodes=2 --ntasks-per-node=2) runs a job of 4 tasks over 2 nodes
    through srun: each node runs 2 of the tasks (no 1-node placeholder would get it: the store tests above)."""
    _require_slurm()
    partitions = (os.environ.get("METASCHED_TESTBED_SLURM_PARTITIONS") or "").split()
    if "siteB" not in partitions:
        pytest.skip(f"no 2-node Slurm partition siteB in the testbed ({partitions})")
    cfg = SiteConfig(
        name="slurmB", adapter="slurm", queue="siteB", cpus=2, nodes=2, limit=1, initial=1, idle_cancel_s=0
    )
    cfg.wall_time_s = 600
    spec = JobSpec('echo "task $SLURM_PROCID node $SLURM_NODEID"', name="wide", tasks=4, nodes=2)
    jobs = _run_sites(tmp_path, cfg, [spec], monkeypatch)
    out = _out(jobs[0])
    assert jobs[0]["state"] == "done", out
    lines = sorted(line for line in out.splitlines() if line.startswith("task "))
    assert [line.split()[1] for line in lines] == ["0", "1", "2", "3"], out
    assert sorted(line.split()[3] for line in lines) == ["0", "0", "1", "1"], out
