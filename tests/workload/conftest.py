"""Shared helpers for the workload tests: fixture paths, the shared traces, random job lists."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import strategies as st

from metasched.model import Job

DATA = Path(__file__).resolve().parents[1] / "data"
REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    """``$METASCHED_SHARED``, else ``<repo root>/../shared``."""
    env = os.environ.get("METASCHED_SHARED")
    return Path(env) if env else (REPO / ".." / "shared").resolve()


def shared_traces() -> list[Path]:
    return sorted((shared_dir() / "data" / "traces").glob("*.swf*"))


@pytest.fixture
def data_dir() -> Path:
    return DATA


@st.composite
def job_lists(draw: st.DrawFn, max_jobs: int = 30, max_procs: int = 64) -> list[Job]:
    """Small random workloads in submit order with unique ids (integral times, as in traces)."""
    n = draw(st.integers(0, max_jobs))
    gaps = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    start = draw(st.integers(0, 10_000))
    jobs = []
    t = start
    ids = draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n, unique=True))
    for i in range(n):
        t += gaps[i]
        run = draw(st.integers(0, 100_000))
        est = draw(st.integers(max(run, 1), 200_000))
        procs = draw(st.integers(1, max_procs))
        home = draw(st.integers(-1, 3))
        jobs.append(Job(ids[i], float(t), float(run), float(est), procs, home_site=home))
    return jobs
