"""The metaqueue executor against the embedded default (SQLite + two local placeholder processes):
the sweep's rows are the local pool's, byte for byte; a failing call comes back as its error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from metasched.experiments import runner
from metasched.experiments import sabin2003 as exp
from metasched.runtime.sweep_executor import MetaqueueExecutor
from metasched.sim.metrics import write_rows_csv
from tests.experiments.test_runner import LOADS, _sweep_data

SCHEMES = ["greedy", "cons-fcfs", "single-easy"]


def _fail(_context: int, task: int) -> dict[str, Any]:
    raise ValueError(f"task {task} fails")


def _pid(_context: int, task: int) -> dict[str, Any]:
    return {"task": task, "pid": os.getpid()}


@pytest.mark.timeout(600)
def test_metaqueue_sweep_gives_the_local_rows_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the jobs import this test module's helpers by name, from the repository root
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])))
    data = _sweep_data(tmp_path)
    local = exp.run_sweep(data, SCHEMES, LOADS, seed=4, workers=1)
    mq = MetaqueueExecutor(tmp_path / "mq", placeholders=2)
    try:
        remote = exp.run_sweep(data, SCHEMES, LOADS, seed=4, executor=mq, stage_dir=tmp_path / "stage")
        pids = runner.run_sweep(0, [1, 2, 3], _pid, executor=mq, stage_dir=tmp_path / "stage")
        jobs = mq.store.jobs()
        with pytest.raises(Exception, match="ValueError: task 7 fails"):
            runner.run_sweep(0, [7], _fail, executor=mq, stage_dir=tmp_path / "stage")
    finally:
        mq.shutdown()
    assert remote == local
    write_rows_csv(tmp_path / "a.csv", remote)
    write_rows_csv(tmp_path / "b.csv", local)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    # every run was a job of the queue (a warm-up job first, a merge job last after every run),
    # run by the placeholders, not here
    assert len(jobs) == (1 + len(local) + 1) + (3 + 1) and all(j["state"] == "done" for j in jobs)
    n = len(local)
    for merge, runs in ((jobs[n + 1], jobs[1 : n + 1]), (jobs[-1], jobs[n + 2 : -1])):
        assert merge["start_at"] >= max(r["end_at"] for r in runs)
    # the rows came from the merge jobs' files
    assert len(list((tmp_path / "mq").glob("*-merged-*.pkl"))) >= 2
    assert os.getpid() not in {r["pid"] for r in pids}
    assert not mq._procs  # the placeholders are gone
