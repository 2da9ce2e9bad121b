"""Tiny workloads built in code, shared by the simulator tests."""

from __future__ import annotations

from metasched.model.job import Job
from metasched.policy.local import REGISTRY
from metasched.sim.replay import simulate


def job(job_id: int, submit: float, run: float, estimate: float, procs: int) -> Job:
    return Job(job_id=job_id, submit_time=submit, run_time=run, requested_time=estimate, requested_procs=procs)


def starts(jobs: list[Job], procs: int, scheduler: str) -> dict[int, float]:
    """``{job_id: start}`` of ``jobs`` simulated on ``procs`` processors under ``scheduler``."""
    schedule = simulate(jobs, procs, REGISTRY[scheduler]())
    return {j.job_id: float(s) for j, s in zip(schedule.jobs, schedule.start_time, strict=True)}
