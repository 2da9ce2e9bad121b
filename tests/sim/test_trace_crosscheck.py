"""Cross-check on the real traces: the fast simulator and the slow reference give the same start
time to every job of a prefix of each shared trace, for every scheduler.

Prefix lengths keep the whole module near a minute: the reference conservative rebuilds its
profile per job and per pass, and CTC-SP2's queue grows long early on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from metasched.policy.local import REGISTRY
from metasched.sim.replay import simulate
from tests.sim.reference import reference_schedule
from tests.sim.traces import read_trace, trace_paths

PREFIX = {"fcfs": 3000, "easy": 3000, "conservative": 1500}
CONSERVATIVE_PREFIX_CTC = 800

PATHS = trace_paths()


@pytest.mark.traces
@pytest.mark.skipif(not PATHS, reason="shared traces absent (../shared/data/traces or METASCHED_SHARED)")
@pytest.mark.parametrize("key", sorted(PREFIX))
@pytest.mark.parametrize("path", PATHS, ids=[p.name.split("-")[0] + "-" + p.name.split("-")[1] for p in PATHS])
def test_fast_equals_reference_on_trace_prefix(path: Path, key: str) -> None:
    n = PREFIX[key]
    if key == "conservative" and path.name.startswith("CTC"):
        n = CONSERVATIVE_PREFIX_CTC
    jobs, procs = read_trace(path, limit=n)
    assert len(jobs) == n
    schedule = simulate(jobs, procs, REGISTRY[key]())
    fast = {j.job_id: float(s) for j, s in zip(schedule.jobs, schedule.start_time, strict=True)}
    ref = reference_schedule(jobs, procs, key)
    differing = [job_id for job_id in ref if ref[job_id] != fast[job_id]]
    assert not differing, f"{len(differing)} jobs differ, first {differing[:5]}"
