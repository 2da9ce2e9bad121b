"""SWF reader, normaliser and writer: hand-worked fixtures, errors, round trips."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metasched.model import Job
from metasched.workload.swf import (
    DROP_NO_PROCS,
    DROP_UNKNOWN_RUN,
    SwfError,
    iter_records,
    read_header,
    read_swf,
    read_swf_head,
    write_swf,
)
from metasched.workload.transforms import first_n
from tests.workload.conftest import job_lists


def test_tiny_fixture_normalisation(data_dir: Path) -> None:
    w = read_swf(data_dir / "swf_tiny.swf")
    assert w.records == 7
    assert w.dropped == {DROP_UNKNOWN_RUN: 1, DROP_NO_PROCS: 1}
    assert len(w.jobs) + sum(w.dropped.values()) == w.records
    assert w.max_procs == 16  # MaxProcs wins over MaxNodes
    by_id = {j.job_id: j for j in w.jobs}
    assert sorted(by_id) == [1, 2, 3, 6, 7]
    j1, j2, j3, j6, j7 = (by_id[i] for i in (1, 2, 3, 6, 7))
    assert (j1.submit_time, j1.run_time, j1.requested_time, j1.requested_procs) == (0, 100, 200, 4)
    # job 2: allocated unknown, requested 8 -> 8; killed at its 200 s request
    assert (j2.requested_procs, j2.run_time, j2.requested_time, j2.status) == (8, 200, 200, 0)
    # job 3: requested time unknown -> estimate = run
    assert (j3.requested_procs, j3.run_time, j3.requested_time) == (2, 50, 50)
    # job 6: a 0 s estimate becomes 1 s; the 0 s run stays
    assert (j6.run_time, j6.requested_time) == (0, 1)
    assert (j7.run_time, j7.requested_time, j7.requested_procs) == (7.5, 7.5, 16)
    assert (j7.user_id, j7.group_id, j7.executable, j7.queue, j7.partition) == (3, 2, 9, 2, 1)
    assert (j7.preceding_job, j7.think_time) == (2, 60)
    assert [j.job_id for j in w.jobs] == [1, 2, 3, 6, 7]


def test_allow_overrun_keeps_real_run_time(data_dir: Path) -> None:
    w = read_swf(data_dir / "swf_tiny.swf", allow_overrun=True)
    j2 = next(j for j in w.jobs if j.job_id == 2)
    assert (j2.run_time, j2.requested_time) == (300, 200)


def test_header_parsing(data_dir: Path) -> None:
    h = read_header(data_dir / "swf_tiny.swf")
    assert h["MaxNodes"] == "8"
    assert h["UnixStartTime"] == "1000000000"
    assert h["TimeZoneString"] == "Europe/Paris"
    assert h["Note"] == "a hand-made fixture with known answers\n(this indented line continues the note)"
    # Free-text comment lines without a "Key:" continue the previous key, they do not invent keys.
    assert "job 1" not in h


def test_max_procs_sources(tmp_path: Path, data_dir: Path) -> None:
    assert read_swf(data_dir / "swf_tiny.swf", max_procs=32).max_procs == 32
    nodes_only = tmp_path / "nodes.swf"
    nodes_only.write_text("; MaxNodes: 338 (batch partition; 512 total)\n1 0 0 5 3 -1 -1 3 9 -1 1 1 1 1 1 1 -1 -1\n")
    assert read_swf(nodes_only).max_procs == 338
    bare = tmp_path / "bare.swf"
    bare.write_text("1 0 0 5 3 -1 -1 3 9 -1 1 1 1 1 1 1 -1 -1\n2 1 0 5 7 -1 -1 3 9 -1 1 1 1 1 1 1 -1 -1\n")
    assert read_swf(bare).max_procs == 7


def test_iter_records_line_numbers(data_dir: Path) -> None:
    recs = list(iter_records(data_dir / "swf_tiny.swf"))
    assert [r.line for r in recs] == list(range(15, 22))
    assert recs[0].fields[:5] == (1, 0, 5, 100, 4)
    assert all(len(r.fields) == 18 for r in recs)


def test_unsorted_is_sorted_and_noted(data_dir: Path) -> None:
    w = read_swf(data_dir / "swf_unsorted.swf")
    assert [(j.submit_time, j.job_id) for j in w.jobs] == [(10, 2), (50, 3), (50, 5), (60, 1)]
    assert len(w.notes) == 1
    assert "line 5" in w.notes[0] and "backwards" in w.notes[0]


@pytest.mark.parametrize(
    ("name", "line", "words"),
    [
        ("swf_bad_field_count.swf", 3, "expected 18 fields, found 17"),
        ("swf_bad_non_numeric.swf", 3, "'run_time' is not a finite number: 'ten'"),
        ("swf_bad_too_wide.swf", 3, "8 processors, wider than the machine (4;"),
        ("swf_bad_negative_submit.swf", 3, "negative submit time"),
        ("swf_bad_duplicate_id.swf", 3, "duplicate job number 1"),
        ("swf_bad_fractional_procs.swf", 2, "not an integer"),
    ],
)
def test_malformed_input_names_file_and_line(data_dir: Path, name: str, line: int, words: str) -> None:
    path = data_dir / name
    with pytest.raises(SwfError) as err:
        read_swf(path)
    assert isinstance(err.value, ValueError)
    assert f"{path}:{line}: " in str(err.value)
    assert words in str(err.value)
    assert err.value.line == line


def test_non_finite_field_rejected(tmp_path: Path) -> None:
    p = tmp_path / "nan.swf"
    p.write_text("1 0 0 nan 3 -1 -1 3 9 -1 1 1 1 1 1 1 -1 -1\n")
    with pytest.raises(SwfError, match=r"nan.swf:1: field 'run_time'"):
        read_swf(p)


def test_width_check_uses_override(data_dir: Path) -> None:
    with pytest.raises(SwfError, match="wider than the machine"):
        read_swf(data_dir / "swf_tiny.swf", max_procs=8)


def test_gzip_by_suffix_and_by_magic(tmp_path: Path, data_dir: Path) -> None:
    plain = read_swf(data_dir / "swf_tiny.swf")
    gz = tmp_path / "tiny.swf.gz"
    with open(data_dir / "swf_tiny.swf", "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    disguised = tmp_path / "tiny_gz.swf"
    shutil.copy(gz, disguised)
    for path in (gz, disguised):
        w = read_swf(path)
        assert w.jobs == plain.jobs
        assert w.header == plain.header
        assert w.dropped == plain.dropped


@pytest.mark.parametrize("suffix", [".swf", ".swf.gz"])
def test_round_trip_fixture(tmp_path: Path, data_dir: Path, suffix: str) -> None:
    w = read_swf(data_dir / "swf_tiny.swf", allow_overrun=True)
    out = tmp_path / f"out{suffix}"
    write_swf(out, w.jobs, header=w.header)
    back = read_swf(out, allow_overrun=True)
    assert back.jobs == w.jobs
    assert back.header == w.header
    assert back.dropped == {}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=job_lists())
def test_round_trip_property(tmp_path_factory: pytest.TempPathFactory, jobs: list[Job]) -> None:
    out = tmp_path_factory.mktemp("rt") / "w.swf"
    for j in jobs:
        j.home_site = -1  # not an SWF field
    write_swf(out, jobs, header={"MaxProcs": "64", "Note": "first\nsecond"})
    back = read_swf(out)
    assert back.jobs == sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    assert back.header == {"MaxProcs": "64", "Note": "first\nsecond"}


def test_write_schedule_fills_wait_and_run(tmp_path: Path) -> None:
    jobs = [Job(1, 0.0, 50.0, 100.0, 2), Job(2, 10.0, 30.0, 40.0, 1)]
    out = tmp_path / "sched.swf"
    write_swf(out, jobs, start_time=[5.0, 60.0], end_time={1: 55.0, 2: 80.5})
    recs = list(iter_records(out))
    assert recs[0].fields[1:4] == (0, 5, 50)
    assert recs[1].fields[1:4] == (10, 50, 20.5)
    assert recs[1].fields[4] == recs[1].fields[7] == 1


def test_write_rejects_broken_schedule(tmp_path: Path) -> None:
    jobs = [Job(1, 10.0, 5.0, 5.0, 1)]
    with pytest.raises(ValueError, match="before its submit"):
        write_swf(tmp_path / "a.swf", jobs, start_time=[9.0])
    with pytest.raises(ValueError, match="ends before it starts"):
        write_swf(tmp_path / "b.swf", jobs, start_time=[10.0], end_time=[9.5])


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_swf(tmp_path / "nope.swf")


# ---------------------------------------------------------------- the two engines agree


def _same(path: Path, **kw: object) -> None:
    from metasched.workload.swf import read_swf_python

    try:
        fast = read_swf(path, **kw)  # type: ignore[arg-type]
    except SwfError as err:
        with pytest.raises(SwfError) as ref:
            read_swf_python(path, **kw)  # type: ignore[arg-type]
        assert str(ref.value) == str(err)
        with pytest.raises(SwfError) as head_err:
            read_swf_head(path, 1, **kw)  # type: ignore[arg-type]
        assert str(head_err.value) == str(err)
        return
    # the first n jobs alone: those of the whole read, and its machine size (widest of all jobs)
    for n in sorted({0, 1, 3, len(fast.jobs) // 2, len(fast.jobs) + 2}):
        head, size = read_swf_head(path, n, **kw)  # type: ignore[arg-type]
        assert head == first_n(fast.jobs, n) and size == fast.max_procs
    slow = read_swf_python(path, **kw)  # type: ignore[arg-type]
    assert fast.jobs == slow.jobs
    assert (fast.header, fast.dropped, fast.records, fast.notes, fast.max_procs) == (
        slow.header,
        slow.dropped,
        slow.records,
        slow.notes,
        slow.max_procs,
    )


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).parents[1] / "data").glob("swf_*.swf")))
@pytest.mark.parametrize("overrun", [False, True])
def test_engines_agree_on_fixtures(data_dir: Path, name: str, overrun: bool) -> None:
    _same(data_dir / name, allow_overrun=overrun)


_FIELD = st.sampled_from(["-1", "0", "1", "2", "7", "64", "100", "3600", "2.5", "-3"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.lists(_FIELD, min_size=16, max_size=16), max_size=12),
    submits=st.lists(st.integers(-1, 50), min_size=12, max_size=12),
    ids=st.lists(st.integers(1, 15), min_size=12, max_size=12),
    header=st.sampled_from(["", "; MaxProcs: 64\n", "; MaxNodes: 8\n"]),
    mangle=st.sampled_from(["", "drop", "extra", "word", "nan"]),
)
def test_engines_agree_on_random_files(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[list[str]],
    submits: list[int],
    ids: list[int],
    header: str,
    mangle: str,
) -> None:
    lines = [" ".join([str(ids[i]), str(submits[i]), *row]) for i, row in enumerate(rows)]
    if lines and mangle:
        k = len(lines) // 2
        parts = lines[k].split()
        if mangle == "drop":
            parts.pop()
        elif mangle == "extra":
            parts.append("1")
        elif mangle == "word":
            parts[5] = "x"
        else:
            parts[3] = "nan"
        lines[k] = " ".join(parts)
    path = tmp_path_factory.mktemp("eng") / "r.swf"
    path.write_text(header + "".join(line + "\n" for line in lines))
    _same(path)
    _same(path, allow_overrun=True)


_VALUE = st.sampled_from([-1.0, 0.0, 1.0, 3.0, 16.0, 59.0, 3600.0, 7200.5])
_PROCS = st.sampled_from([-1.0, 0.0, 1.0, 3.0, 16.0])


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(st.tuples(_VALUE, _PROCS, _PROCS, _VALUE, st.integers(0, 500)), max_size=30),
    overrun=st.booleans(),
)
def test_normalise_properties(rows: list[tuple[float, float, float, float, int]], overrun: bool) -> None:
    from metasched.workload.swf import SwfRecord, normalise

    records = []
    for i, (run, alloc, req_procs, req_time, submit) in enumerate(rows):
        f = [-1.0] * 18
        f[0], f[1], f[3], f[4], f[7], f[8] = i + 1, float(submit), run, alloc, req_procs, req_time
        records.append(SwfRecord(i + 1, tuple(f)))
    jobs, dropped, n, _ = normalise(records, allow_overrun=overrun)
    assert n == len(rows)
    assert len(jobs) + sum(dropped.values()) == n
    assert dropped.get(DROP_UNKNOWN_RUN, 0) == sum(1 for r in rows if r[0] < 0)
    assert dropped.get(DROP_NO_PROCS, 0) == sum(1 for r in rows if r[0] >= 0 and max(r[1], r[2]) <= 0)
    assert [(j.submit_time, j.job_id) for j in jobs] == sorted((j.submit_time, j.job_id) for j in jobs)
    for j in jobs:
        run, alloc, req_procs, req_time, _ = rows[j.job_id - 1]
        assert j.requested_procs == max(alloc, req_procs) > 0
        expected_est = req_time if req_time >= 0 else run
        expected_est = 1.0 if expected_est <= 0 else expected_est
        assert j.requested_time == expected_est > 0
        assert j.run_time == (run if overrun else min(run, expected_est))


def test_read_swf_head_refuses_bad_arguments(data_dir: Path) -> None:
    path = sorted(data_dir.glob("swf_*.swf"))[0]
    with pytest.raises(ValueError, match="n must be"):
        read_swf_head(path, -1)
    with pytest.raises(ValueError, match="max_procs"):
        read_swf_head(path, 2, max_procs=0)


def test_read_swf_head_gives_the_machine_size_of_the_whole_file(tmp_path: Path) -> None:
    """No MaxProcs in the header: the machine size is the widest job of the whole file, also when
    only the first jobs are kept (well formed and sorted: the fast engine's path)."""
    widths = [4, 2, 16, 8]
    lines = [f"{i + 1} {10 * i} 0 100 {w} -1 -1 {w} 200 -1 1 1 1 -1 1 -1 -1 -1" for i, w in enumerate(widths)]
    path = tmp_path / "head.swf"
    path.write_text("; Version: 2.2\n" + "\n".join(lines) + "\n")
    whole = read_swf(path)
    assert whole.max_procs == 16 and len(whole.jobs) == 4
    head, size = read_swf_head(path, 2)
    assert [j.requested_procs for j in head] == [4, 2] and size == 16
    assert read_swf_head(path, 0) == ([], 16)


def test_read_swf_first_keeps_the_first_jobs_of_the_whole_file(tmp_path: Path) -> None:
    """``first=N``: the first N jobs in submit order, as ``transforms.first_n`` of the whole read;
    what describes the file (records, dropped, machine size) is the whole file's."""
    from metasched.workload import transforms
    from metasched.workload.swf import read_swf

    lines = ["; MaxProcs: 8"]
    for i, submit in enumerate([0, 5, 5, 9, 12], start=1):
        lines.append(f"{i} {submit} -1 {10 * i} 2 -1 -1 2 {20 * i} -1 1 1 1 1 1 1 -1 -1")
    lines.append("6 13 -1 -1 2 -1 -1 2 30 -1 0 1 1 1 1 1 -1 -1")  # unknown run time: dropped
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    whole = read_swf(path)
    head = read_swf(path, first=3)
    assert [j.job_id for j in head.jobs] == [j.job_id for j in transforms.first_n(whole.jobs, 3)] == [1, 2, 3]
    assert head.jobs == whole.jobs[:3]
    assert (head.records, head.dropped, head.max_procs) == (whole.records, whole.dropped, whole.max_procs)
    with pytest.raises(ValueError, match="first must be >= 0"):
        read_swf(path, first=-1)
