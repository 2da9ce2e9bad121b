"""Batch adapters: native-state tables and output parsing on recorded outputs (tests/runtime/data/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasched.runtime.batch import REGISTRY, GridEngineAdapter, PbsAdapter, SlurmAdapter
from metasched.runtime.batch.base import BatchError, PlaceholderSpec
from metasched.runtime.metaqueue.states import PlaceholderState as S

DATA = Path(__file__).parent / "data"


def test_registry_lists_every_adapter_module() -> None:
    import pkgutil

    import metasched.runtime.batch as pkg

    modules = {m.name for m in pkgutil.iter_modules(pkg.__path__)} - {"base"}
    assert {cls.__module__.rsplit(".", 1)[1] for cls in REGISTRY.values()} == modules


def test_slurm_parsing() -> None:
    assert SlurmAdapter.parse_squeue((DATA / "slurm_squeue.txt").read_text()) == {
        "2": S.CANCELLED,
        "1": S.RUNNING,
        "3": S.RUNNING,
        "4": S.FAILED,
    }
    assert SlurmAdapter.parse_sacct((DATA / "slurm_sacct.txt").read_text()) == {"4": S.FAILED, "2": S.CANCELLED}
    assert SlurmAdapter.map_state("TIMEOUT") == S.EXPIRED  # wall time reached: expired, not failed
    assert SlurmAdapter.map_state("PREEMPTED") == S.EXPIRED
    assert SlurmAdapter.map_state("WHATEVER") == S.UNKNOWN


def test_gridengine_parsing() -> None:
    assert GridEngineAdapter.parse_qstat((DATA / "sge_qstat.txt").read_text()) == {
        "1": S.RUNNING,
        "2": S.RUNNING,
        "3": S.QUEUED,
    }
    assert GridEngineAdapter.parse_qacct((DATA / "sge_qacct.txt").read_text()) == {
        "1": S.CANCELLED,  # qdel: SIGKILL, exit 137
        "4": S.FAILED,  # exit 1
        "5": S.EXPIRED,  # h_rt enforced by qmaster
    }


def test_pbs_parsing() -> None:
    assert PbsAdapter.parse_qstat_f((DATA / "pbs_qstat_f.txt").read_text()) == {
        "101.pbsserver": S.RUNNING,
        "102.pbsserver": S.QUEUED,
        "103.pbsserver": S.DONE,
        "104.pbsserver": S.EXPIRED,
        "105.pbsserver": S.CANCELLED,
        "106.pbsserver": S.FAILED,
        "107.pbsserver": S.QUEUED,
        "108.pbsserver": S.RUNNING,
    }


def test_every_command_goes_through_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake sbatch / qsub on PATH: the adapters build scripts with the directives and parse the answer."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls"
    for name, answer in {"sbatch": "4242;cluster", "qsub": "77.pbsserver", "squeue": "4242 PENDING"}.items():
        (bindir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\necho "{answer}"\n')
        (bindir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    spec = PlaceholderSpec("ph1", ["metasched", "placeholder"], cpus=2, wall_time_s=600)
    slurm = SlurmAdapter(queue="short", workdir=tmp_path / "w")
    assert slurm.submit(spec) == "4242"
    script = (tmp_path / "w" / "ph1.sh").read_text()
    assert "#SBATCH --partition=short" in script and "#SBATCH --time=10" in script
    assert "#SBATCH --ntasks-per-node=2" in script and "#SBATCH --cpus-per-task=1" in script
    assert script.rstrip().endswith("exec metasched placeholder")
    assert slurm.poll(["4242"]) == {"4242": S.QUEUED}
    assert PbsAdapter(queue="batch", workdir=tmp_path / "p").submit(spec) == "77.pbsserver"
    assert "#PBS -l walltime=00:10:00" in (tmp_path / "p" / "ph1.sh").read_text()
    assert GridEngineAdapter(queue="siteA.q", workdir=tmp_path / "g").submit(spec) == "77"
    script = (tmp_path / "g" / "ph1.sh").read_text()
    assert "#$ -pe smp 2" in script and "#$ -l h_rt=600" in script and "#$ -q siteA.q" in script
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["sbatch", "squeue", "qsub", "qsub"]


def test_run_reports_failures_and_timeouts(tmp_path: Path) -> None:
    adapter = SlurmAdapter(workdir=tmp_path, command_timeout_s=0.5)
    with pytest.raises(BatchError, match="exited 3: boom"):
        adapter.run(["sh", "-c", "echo boom >&2; exit 3"])
    with pytest.raises(BatchError, match="no answer within"):
        adapter.run(["sleep", "5"])
    with pytest.raises(BatchError, match="no-such-command"):
        adapter.run(["no-such-command"])
    assert adapter.run(["sh", "-c", "exit 1"], check=False).returncode == 1
