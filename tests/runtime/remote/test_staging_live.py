"""Staging over a real SSH master: inputs in, a job runs on the remote side, outputs back."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasched.runtime.remote.ssh import SshRunner
from metasched.runtime.remote.staging import FINISHED, STAGED_IN, STAGED_OUT, SiteStager, StageSpec, job_dir

pytestmark = pytest.mark.live


def test_stage_in_run_stage_out_over_ssh(lo_runner: SshRunner, remote_dir: str, tmp_path: Path) -> None:
    (tmp_path / "inputs" / "many").mkdir(parents=True)
    (tmp_path / "inputs" / "a.txt").write_text("alpha\n")
    for i in range(5):
        (tmp_path / "inputs" / "many" / f"{i}.txt").write_text(f"{i}\n")
    spec = StageSpec.from_workflow(
        {"inputs": ["inputs/a.txt", "inputs/many/:parts"], "outputs": ["sum.txt:out/sum.txt", "logs/:out/logs/"]},
        base_dir=tmp_path,
    )
    stager = SiteStager(lo_runner)
    dirs = {job_dir(remote_dir, j, 1): spec for j in (1, 2)}
    report = stager.sync(dirs)
    assert sorted(report.staged_in) == sorted(dirs) and not report.failed
    d = job_dir(remote_dir, 1, 1)
    assert stager.markers([d]) == {d: {STAGED_IN}}
    # The "job" runs remotely, as the test user, in its directory.
    lo_runner.run(
        f"cd {d} && mkdir logs && cat parts/*.txt | awk '{{s+=$1}} END {{print s}}' > sum.txt && cat a.txt > logs/a.log"
        f" && echo 0 > {FINISHED}",
        check=True,
    )
    report = stager.sync(dirs)
    assert report.staged_out == [d] and not report.failed
    assert (tmp_path / "out" / "sum.txt").read_text() == "10\n"
    assert (tmp_path / "out" / "logs" / "a.log").read_text() == "alpha\n"
    assert STAGED_OUT in stager.markers([d])[d]
    assert STAGED_OUT not in stager.markers([job_dir(remote_dir, 2, 1)])[job_dir(remote_dir, 2, 1)]
