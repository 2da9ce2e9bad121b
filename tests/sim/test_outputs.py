"""The column-by-column writers of a simulation's per-job outputs (``sim/outputs.py``,
``metrics.write_jobs_csv``) give exactly the bytes of the row-by-row writers they replace."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model.job import Job
from metasched.policy.local import EasyBackfill
from metasched.sim.metrics import per_job, write_jobs_csv
from metasched.sim.outputs import number_text, write_jobs_parquet, write_schedule_swf
from metasched.sim.replay import simulate
from metasched.workload import generate
from metasched.workload.swf import _num, write_swf
from tests.sim.test_properties import workloads


def rows_csv(schedule: object, path: Path) -> None:
    """The row-by-row writer ``write_jobs_csv`` was (``csv.writer`` over ``tolist`` values)."""
    cols = per_job(schedule)  # type: ignore[arg-type]
    names = list(cols)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(names)
        for row in zip(*(cols[name].tolist() for name in names), strict=True):
            writer.writerow(row)


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(st.lists(st.one_of(finite, st.integers(-(10**17), 10**17).map(float)), max_size=40))
def test_number_text_is_write_swfs_number(values: list[float]) -> None:
    assert number_text(np.array(values, dtype=np.float64)) == [_num(v) for v in values]


@settings(max_examples=60, deadline=None)
@given(workloads(overrun=True), st.floats(0.0, 1e9, allow_nan=False), st.booleans())
def test_jobs_csv_and_swf_are_the_row_writers_bytes(
    tmp_path_factory: pytest.TempPathFactory, workload: tuple[list[Job], int], shift: float, gz: bool
) -> None:
    jobs, procs = workload
    jobs = [j.copy(submit_time=j.submit_time + shift, think_time=j.run_time / 3) for j in jobs]
    schedule = simulate(jobs, procs, EasyBackfill())
    d = tmp_path_factory.mktemp("out")
    write_jobs_csv(schedule, d / "new.csv")
    rows_csv(schedule, d / "old.csv")
    assert (d / "new.csv").read_bytes() == (d / "old.csv").read_bytes()
    suffix = ".swf.gz" if gz else ".swf"
    header = {"Note": "a\nb", "MaxProcs": str(procs)}
    write_schedule_swf(d / f"new{suffix}", schedule.jobs, schedule.start_time, schedule.end_time, header=header)
    write_swf(
        d / f"old{suffix}", schedule.jobs, header=header,
        start_time=schedule.start_time.tolist(), end_time=schedule.end_time.tolist(),
    )  # fmt: skip
    if gz:
        import gzip

        assert gzip.decompress((d / f"new{suffix}").read_bytes()) == gzip.decompress((d / f"old{suffix}").read_bytes())
    else:
        assert (d / f"new{suffix}").read_bytes() == (d / f"old{suffix}").read_bytes()


def test_a_start_before_the_submit_is_refused_as_write_swf_does(tmp_path: Path) -> None:
    jobs = [Job(job_id=7, submit_time=10.0, run_time=1.0, requested_time=1.0, requested_procs=1)]
    with pytest.raises(ValueError, match=r"job 7 starts at 5\.0, before its submit 10\.0"):
        write_schedule_swf(tmp_path / "x.swf", jobs, np.array([5.0]), np.array([6.0]))
    with pytest.raises(ValueError, match="job 7 ends before it starts"):
        write_schedule_swf(tmp_path / "x.swf", jobs, np.array([10.0]), np.array([9.0]))


def test_parquet_holds_the_csv_columns(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    schedule = simulate(generate.synthetic(500, 64, seed=3), 64, EasyBackfill())
    write_jobs_parquet(schedule, tmp_path / "jobs.parquet")
    table = pq.read_table(tmp_path / "jobs.parquet")
    cols = per_job(schedule)
    assert table.column_names == list(cols)
    for name, values in cols.items():
        assert np.array_equal(table.column(name).to_numpy(), values, equal_nan=True)
