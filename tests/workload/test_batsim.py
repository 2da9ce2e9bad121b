"""Batsim JSON workloads: a round trip keeps the jobs; bad profiles are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.model.job import Job
from metasched.workload.batsim import BatsimError, read_batsim, write_batsim
from metasched.workload.swf import read_swf


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 5000), st.integers(0, 3000), st.integers(1, 64)),
        min_size=1,
        max_size=20,
    ),
    st.sampled_from([None, 1e9]),
)
def test_round_trip_keeps_every_job(tmp_path_factory: pytest.TempPathFactory, rows: list, speed: float | None) -> None:
    jobs = sorted(
        (Job(i + 1, float(s), float(r), float(r + extra), p) for i, (s, r, extra, p) in enumerate(rows)),
        key=lambda j: (j.submit_time, j.job_id),
    )
    path = tmp_path_factory.mktemp("b") / "w.json"
    write_batsim(path, jobs, 64, speed_flops=speed)
    back, nb_res = read_batsim(path, speed_flops=speed)
    assert nb_res == 64
    key = [(j.job_id, j.submit_time, j.requested_time, j.requested_procs) for j in jobs]
    assert [(j.job_id, j.submit_time, j.requested_time, j.requested_procs) for j in back] == key
    assert [j.run_time for j in back] == pytest.approx([j.run_time for j in jobs])


def test_hand_written_workload_and_its_errors(tmp_path: Path) -> None:
    doc = {
        "nb_res": 8,
        "jobs": [
            {"id": "w!3", "subtime": 5, "walltime": 100, "res": 2, "profile": "d"},
            {"id": 4, "subtime": 1, "walltime": -1, "res": 4, "profile": "ph"},
        ],
        "profiles": {
            "d": {"type": "delay", "delay": 60},
            "ph": {"type": "parallel_homogeneous", "cpu": 2e10, "com": 0},
        },
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    jobs, nb = read_batsim(path, speed_flops=1e9)
    assert nb == 8
    assert [(j.job_id, j.submit_time, j.run_time, j.requested_time, j.requested_procs) for j in jobs] == [
        (4, 1.0, 20.0, 20.0, 4),
        (3, 5.0, 60.0, 100.0, 2),
    ]
    with pytest.raises(BatsimError, match=r"jobs\[1\]: profile 'ph' is parallel_homogeneous: give speed_flops"):
        read_batsim(path)
    doc["profiles"]["d"] = {"type": "sequence", "seq": []}
    path.write_text(json.dumps(doc))
    with pytest.raises(BatsimError, match=r"jobs\[0\]: profile 'd' has type 'sequence'"):
        read_batsim(path, speed_flops=1e9)


def test_cli_converts_both_ways(tmp_path: Path) -> None:
    swf = tmp_path / "t.swf"
    swf.write_text(
        "; MaxProcs: 16\n"
        "1 0 -1 50 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 10 -1 30 2 -1 -1 2 60 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    runner = CliRunner()
    res = runner.invoke(app, ["batsim", str(swf), str(tmp_path / "t.json")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["batsim", str(tmp_path / "t.json"), str(tmp_path / "back.swf")])
    assert res.exit_code == 0, res.output
    back = read_swf(tmp_path / "back.swf")
    assert [(j.submit_time, j.run_time, j.requested_time, j.requested_procs) for j in back.jobs] == [
        (0.0, 50.0, 100.0, 4),
        (10.0, 30.0, 60.0, 2),
    ]
    (tmp_path / "bad.json").write_text("{")
    res = runner.invoke(app, ["batsim", str(tmp_path / "bad.json"), str(tmp_path / "x.swf")])
    assert res.exit_code == 2 and "error: " in res.output and "invalid JSON" in res.output
