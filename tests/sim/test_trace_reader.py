"""The package's SWF reader and the tests' independent minimal reader agree on every shared trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sim.traces import read_trace, read_trace_minimal, trace_paths

PATHS = trace_paths()


@pytest.mark.traces
@pytest.mark.skipif(not PATHS, reason="shared traces absent (../shared/data/traces or METASCHED_SHARED)")
@pytest.mark.parametrize("path", PATHS, ids=[p.name.split("-cln")[0] for p in PATHS])
def test_readers_agree_on_a_prefix(path: Path) -> None:
    a, procs_a = read_trace(path, 4000)
    b, procs_b = read_trace_minimal(path, 4000)
    assert procs_a == procs_b
    fields = ("job_id", "submit_time", "run_time", "requested_time", "requested_procs")
    assert [tuple(getattr(j, f) for f in fields) for j in a] == [tuple(getattr(j, f) for f in fields) for j in b]
