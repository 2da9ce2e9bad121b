"""Test-side access to the shared SWF traces (read-only, never copied into the repository).

Until :mod:`metasched.workload.swf` is on this branch, a minimal reader applies the
normalisation rules of issue 2 itself: processors = max(allocated, requested); estimate =
requested time, or the run time where it is -1; jobs with run < 0 or processors <= 0 are dropped;
run = min(run, estimate); an estimate of 0 becomes 1 s.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from metasched.model.job import Job

REPO_ROOT = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    env = os.environ.get("METASCHED_SHARED")
    return Path(env) if env else (REPO_ROOT / ".." / "shared").resolve()


def trace_paths() -> list[Path]:
    return sorted((shared_dir() / "data" / "traces").glob("*.swf.gz"))


def read_trace(path: Path, limit: int | None = None) -> tuple[list[Job], int]:
    """``(jobs, max_procs)`` of an SWF trace, normalised; at most ``limit`` jobs."""
    try:
        from metasched.workload.swf import read_swf  # type: ignore[attr-defined]
    except ImportError:
        read_swf = None
    if read_swf is not None:
        workload = read_swf(path)
        jobs = workload.jobs if limit is None else workload.jobs[:limit]
        return list(jobs), int(workload.max_procs)
    return read_trace_minimal(path, limit)


def read_trace_minimal(path: Path, limit: int | None = None) -> tuple[list[Job], int]:
    jobs: list[Job] = []
    max_procs = 0
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            if line.startswith(";"):
                key, _, value = line[1:].partition(":")
                if (key.strip() in ("MaxProcs", "MaxNodes") and max_procs == 0) or key.strip() == "MaxProcs":
                    max_procs = int(value.split()[0])
                continue
            f = line.split()
            run, alloc, req_procs, req_time = float(f[3]), int(f[4]), int(f[7]), float(f[8])
            procs = max(alloc, req_procs)
            if run < 0 or procs <= 0:
                continue
            estimate = req_time if req_time >= 0 else run
            if estimate <= 0:
                estimate = 1.0
            jobs.append(Job(int(f[0]), float(f[1]), min(run, estimate), estimate, procs))
            if limit is not None and len(jobs) >= limit:
                break
    widest = max((j.requested_procs for j in jobs), default=0)
    return jobs, max(max_procs, widest)


def require_traces() -> list[Path]:
    paths = trace_paths()
    if not paths:
        pytest.skip(f"shared traces not found under {shared_dir()} (set METASCHED_SHARED)")
    return paths
