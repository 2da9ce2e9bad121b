"""Every shared Parallel Workloads Archive trace reads, and kept + dropped = records."""

from __future__ import annotations

import gzip

import pytest

from metasched.workload.swf import read_swf
from tests.workload.conftest import shared_dir, shared_traces

TRACES = shared_traces()

pytestmark = [
    pytest.mark.traces,
    pytest.mark.skipif(
        not TRACES, reason=f"shared traces not found in {shared_dir() / 'data' / 'traces'} (set METASCHED_SHARED)"
    ),
]


@pytest.mark.parametrize("path", TRACES, ids=[p.name.split("-")[0] + "-" + p.name.split("-")[1] for p in TRACES])
def test_shared_trace_reads(path) -> None:  # type: ignore[no-untyped-def]
    with gzip.open(path, "rt", encoding="latin-1") as fh:
        job_lines = sum(1 for line in fh if line.strip() and not line.lstrip().startswith(";"))
    w = read_swf(path)
    assert w.records == job_lines
    assert len(w.jobs) + sum(w.dropped.values()) == w.records
    assert w.max_procs > 0
    assert all(0 < j.requested_procs <= w.max_procs for j in w.jobs)
    assert all(j.requested_time > 0 and 0 <= j.run_time <= j.requested_time for j in w.jobs)
    submits = [j.submit_time for j in w.jobs]
    assert submits == sorted(submits)
    assert "UnixStartTime" in w.header
