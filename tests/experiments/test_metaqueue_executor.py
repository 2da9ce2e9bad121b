"""The metaqueue executor against the embedded default (SQLite + two local placeholder processes):
the sweep's rows are the local pool's, byte for byte; a failing call comes back as its error."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from metasched.experiments import runner
from metasched.experiments import sabin2003 as exp
from metasched.runtime.sweep_executor import MetaqueueExecutor, merge_results
from metasched.sim.metrics import write_rows_csv
from tests.experiments.test_runner import LOADS, _sweep_data
from tests.runtime.procs import stop

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


_SUBMIT_AND_DIE = """
import operator, os, sys
from pathlib import Path
from metasched.runtime.sweep_executor import MetaqueueExecutor, merge_results

mq = MetaqueueExecutor(Path(sys.argv[1]), url=sys.argv[2])
runs = [mq.submit(operator.mul, a, a + 1) for a in (2, 3, 4)]
mq.submit_merge(runs)
print("submitted", flush=True)
os.kill(os.getpid(), 9)  # the submitting command is gone: no shutdown, no wait
"""


@pytest.mark.timeout(300)
def test_the_merge_job_completes_a_sweep_whose_command_is_gone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    work = tmp_path / "work"
    gone = subprocess.run(
        [sys.executable, "-c", _SUBMIT_AND_DIE, str(work), url], capture_output=True, text=True, timeout=120
    )
    assert gone.returncode == -9 and "submitted" in gone.stdout, gone.stderr
    assert not list(work.glob("*-merged-*.pkl"))  # nothing ran: no placeholder yet
    # a placeholder of the shared queue comes later and runs the runs, then the merge
    logs = tmp_path / "logs"
    logs.mkdir()
    cmd = [sys.executable, "-m", "metasched", "placeholder", "--site", "local", "--db", url, "--id", "late"]
    cmd += ["--linger", "--max-wait", "0.2", "--prefetch", "0", "--log-dir", str(logs)]
    with (logs / "placeholder.log").open("wb") as out:
        placeholder = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (merged := list(work.glob("*-merged-*.pkl"))) and time.monotonic() < deadline:
            assert placeholder.poll() is None, (logs / "placeholder.log").read_text()
            time.sleep(0.2)
    finally:
        stop(placeholder, grace_s=30)
    assert len(merged) == 1, "the merge job did not write its file"
    assert pickle.loads(merged[0].read_bytes()) == [(True, 6), (True, 12), (True, 20)]


def test_merge_results_names_a_run_without_a_result(tmp_path: Path) -> None:
    (tmp_path / "1.result.pkl").write_bytes(pickle.dumps((True, {"a": 1})))
    merged = merge_results([str(tmp_path / "1.result.pkl"), str(tmp_path / "2.result.pkl")], str(tmp_path / "m.pkl"))
    (first, second) = pickle.loads(Path(merged).read_bytes())
    assert first == (True, {"a": 1})
    assert second[0] is False and "2.result.pkl" in str(second[1])
