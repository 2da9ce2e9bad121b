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


def test_engines_agree_on_a_real_trace() -> None:
    """The vectorised and the streaming engines give the same KTH workload, with and without overrun."""
    from metasched.workload.swf import read_swf_python

    kth = [p for p in TRACES if p.name.startswith("KTH")]
    if not kth:
        pytest.skip("KTH-SP2 trace not in the shared traces")
    for overrun in (False, True):
        fast, slow = read_swf(kth[0], allow_overrun=overrun), read_swf_python(kth[0], allow_overrun=overrun)
        assert fast.jobs == slow.jobs
        assert (fast.header, fast.dropped, fast.records) == (slow.header, slow.dropped, slow.records)


def test_ctc_like_resampled_from_ctc_keeps_its_distributions() -> None:
    from metasched.workload.generate import ctc_like
    from metasched.workload.info import describe

    ctc = [p for p in TRACES if p.name.startswith("CTC")]
    if not ctc:
        pytest.skip("CTC-SP2 trace not in the shared traces")
    source = read_swf(ctc[0])
    real = describe(source)
    syn = describe(ctc_like(10_000, seed=11, source_jobs=source.jobs), procs=source.max_procs)
    assert syn["serial_fraction"] == pytest.approx(real["serial_fraction"], abs=0.02)
    assert syn["power_of_two_fraction"] == pytest.approx(real["power_of_two_fraction"], abs=0.02)
    assert syn["run_time"]["p50"] == pytest.approx(real["run_time"]["p50"], rel=0.15)
    assert syn["span_s"] / 9_999 == pytest.approx(real["span_s"] / (real["jobs"] - 1), rel=0.15)
    # the built-in tables describe the same trace
    par = describe(ctc_like(10_000, seed=11), procs=source.max_procs)
    assert par["serial_fraction"] == pytest.approx(real["serial_fraction"], abs=0.02)
    assert par["run_time"]["p50"] == pytest.approx(real["run_time"]["p50"], rel=0.15)
    assert par["estimate_accuracy"]["exact_fraction"] == pytest.approx(
        real["estimate_accuracy"]["exact_fraction"], abs=0.03
    )
