"""The one sweep runner: the same rows in task order whatever runs them (inline, the local pool,
a real Dask scheduler with two workers, a plain ProcessPoolExecutor); resuming from a journal."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from metasched.experiments import runner
from metasched.experiments import sabin2003 as exp
from metasched.sim.metrics import write_rows_csv
from tests.experiments.test_sabin2003 import base_jobs, two_sites

SCHEMES = ["greedy", "mr-easy", "cons-fcfs", "single-easy"]
LOADS = [1.0, 1.6]


def _sweep_data(tmp_path: Path) -> dict[str, exp.TraceData]:
    t = two_sites()
    return {"T": exp.TraceData("T", base_jobs(), 4, t), "U": exp.TraceData("U", base_jobs()[:9], 6, t)}


def _csv(rows: list[dict[str, Any]], tmp_path: Path, name: str) -> bytes:
    path = tmp_path / name
    write_rows_csv(path, rows)
    return path.read_bytes()


def _square(context: int, task: int) -> dict[str, Any]:
    return {"task": task, "value": context * task * task, "pid": 0}


def test_inline_pool_and_any_executor_give_the_same_rows_in_task_order(tmp_path: Path) -> None:
    tasks = [5, 3, 9, 1, 7]
    inline = runner.run_sweep(10, tasks, _square, workers=1)
    assert [r["task"] for r in inline] == tasks
    pooled = runner.run_sweep(10, tasks, _square, workers=2, order=lambda t: -t)
    with ProcessPoolExecutor(2) as pool:
        staged = runner.run_sweep(10, tasks, _square, executor=pool, stage_dir=tmp_path / "stage")
    assert inline == pooled == staged
    with pytest.raises(ValueError, match="stage_dir"):
        runner.run_sweep(10, tasks, _square, executor=ProcessPoolExecutor(1))


def test_done_tasks_are_not_run_again() -> None:
    seen: list[int] = []
    done = {3: {"task": 3, "value": -1, "pid": 0}}
    rows = runner.run_sweep(2, [1, 3, 4], _square, workers=1, done=done, on_done=lambda t, _r: seen.append(t))
    assert seen == [1, 4] and rows[1]["value"] == -1 and [r["task"] for r in rows] == [1, 3, 4]


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_counts_the_done_tasks_first_then_each_finished_one(workers: int) -> None:
    calls: list[int] = []
    done = {3: {"task": 3, "value": -1, "pid": 0}, 5: {"task": 5, "value": -1, "pid": 0}}
    runner.run_sweep(2, [1, 3, 4, 5], _square, workers=workers, done=done, progress=calls.append)
    assert calls == [2, 1, 1]
    calls.clear()
    runner.run_sweep(2, [1, 4], _square, workers=workers, progress=calls.append)
    assert calls == [1, 1]  # (nothing done before: no call for it)


def test_journal_resumes_refuses_other_inputs_and_drops_a_cut_last_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.partial.jsonl"
    with runner.Journal(path, {"seed": 1}).open(resume=False) as log:
        log.append({"a": 1})
        log.append({"a": 2})
    with path.open("a") as fh:
        fh.write('{"inputs": {"seed": 1}, "ro')  # killed mid-write
    assert runner.Journal(path, {"seed": 1}).read() == [{"a": 1}, {"a": 2}]
    assert len(path.read_text().splitlines()) == 2  # the cut line is gone, the next appends start clean
    with pytest.raises(runner.JournalError, match="other inputs"):
        runner.Journal(path, {"seed": 2}).read()
    path.write_text("garbage\n" + path.read_text())
    with pytest.raises(runner.JournalError, match=":1: not a JSON line"):
        runner.Journal(path, {"seed": 1}).read()
    assert runner.Journal(tmp_path / "none.jsonl", {}).read() == []


def test_sabin_sweep_resumes_to_the_same_rows(tmp_path: Path) -> None:
    data = _sweep_data(tmp_path)
    full = exp.run_sweep(data, SCHEMES, LOADS, seed=4, workers=1)
    half = full[::2]
    ran: list[dict[str, Any]] = []
    resumed = exp.run_sweep(data, SCHEMES, LOADS, seed=4, workers=2, done_rows=half, on_done=ran.append)
    assert resumed == full and len(ran) == len(full) - len(half)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"no Dask scheduler on port {port} after {timeout_s} s")


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[str]:
    """A real ``dask scheduler`` and two ``dask worker`` processes (one thread each), stopped after."""
    pytest.importorskip("distributed")
    dask = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
    if dask is None:
        pytest.skip("the dask command is not installed")
    port = _free_port()
    # the workers import this test module's helpers (``_pid``) by name, as a cluster would import ours
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    logs = [(tmp_path / f"dask{i}.log").open("w") for i in range(3)]
    procs = [
        subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            stdout=logs[0],
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    ]
    try:
        _wait_port(port, 60)
        for i in (1, 2):
            procs.append(
                subprocess.Popen(
                    [
                        dask,
                        "worker",
                        f"tcp://127.0.0.1:{port}",
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--local-directory",
                        str(tmp_path / f"w{i}"),
                    ],
                    stdout=logs[i],
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )
        from distributed import Client

        with Client(f"tcp://127.0.0.1:{port}", timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield f"dask://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        for fh in logs:
            fh.close()


@pytest.mark.timeout(300)
def test_dask_executor_gives_the_local_rows_byte_for_byte(tmp_path: Path, dask_cluster: str) -> None:
    data = _sweep_data(tmp_path)
    local = exp.run_sweep(data, SCHEMES, LOADS, seed=4, workers=2)
    executor, close = runner.make_executor(dask_cluster, workers=2)
    try:
        assert executor is not None
        seen: list[dict[str, Any]] = []
        remote = exp.run_sweep(
            data, SCHEMES, LOADS, seed=4, executor=executor, stage_dir=tmp_path / "stage", on_done=seen.append
        )
        # both workers took part: the runs really went through the cluster
        pids = runner.run_sweep(0, list(range(8)), _pid, executor=executor, stage_dir=tmp_path / "stage")
    finally:
        close()
    assert remote == local and len(seen) == len(local)
    assert _csv(remote, tmp_path, "remote.csv") == _csv(local, tmp_path, "local.csv")
    assert os.getpid() not in {r["pid"] for r in pids}


def _pid(_context: int, task: int) -> dict[str, Any]:
    time.sleep(0.05)
    return {"task": task, "pid": os.getpid()}


def test_make_executor_errors_are_one_clear_line() -> None:
    with pytest.raises(ValueError, match="expected local, metaqueue or dask://HOST:PORT"):
        runner.make_executor("ssh://x", workers=1)
    pytest.importorskip("distributed")
    with pytest.raises(ValueError, match="no Dask scheduler answers"):
        runner.make_executor(f"dask://127.0.0.1:{_free_port()}", workers=1, connect_timeout_s=2)


def test_rows_csv_round_trip_is_exact(tmp_path: Path) -> None:
    rows = [{"x": 0.1 + 0.2, "y": 8460675.123456789}]
    text = _csv(rows, tmp_path, "r.csv").decode()
    back = list(csv.DictReader(io.StringIO(text)))
    assert float(back[0]["x"]) == rows[0]["x"] and float(back[0]["y"]) == rows[0]["y"]
    assert json.loads(json.dumps(rows)) == rows
