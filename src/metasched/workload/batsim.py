"""Batsim JSON workloads: read and write, so traces move between metasched and Batsim.

Format (Batsim's ``workload.json``)::

    {"nb_res": 64,
     "jobs": [{"id": "w0!1", "subtime": 0.0, "walltime": 3600, "res": 4, "profile": "p1"}],
     "profiles": {"p1": {"type": "delay", "delay": 120.0},
                  "p2": {"type": "parallel_homogeneous", "cpu": 1e12, "com": 0}}}

A ``delay`` profile's delay is the job's run time. A ``parallel_homogeneous`` profile gives the
flops each processor computes (``cpu``); its run time is ``cpu / speed_flops`` for the processor
speed the caller gives (Batsim takes it from its platform file, which this reader does not see;
communication ``com`` is ignored: the model has no network). Other profile types are refused with
the job and profile named. Job ids may be ``"workload!number"`` (the number is kept) or integers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metasched.model.job import Job

PROFILE_TYPES = ("delay", "parallel_homogeneous")


class BatsimError(ValueError):
    """A Batsim workload that cannot be read (the message names the job or profile)."""


def _job_id(raw: Any, fallback: int) -> int:
    text = str(raw)
    tail = text.rsplit("!", 1)[-1]
    try:
        return int(tail)
    except ValueError:
        return fallback


def read_batsim(path: str | Path, *, speed_flops: float | None = None) -> tuple[list[Job], int]:
    """The jobs of a Batsim JSON workload (in submit order) and its ``nb_res``.

    ``speed_flops`` (flops per second per processor) is needed when ``parallel_homogeneous``
    profiles are present. Raises :class:`BatsimError` naming the job or profile at fault."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise BatsimError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BatsimError(f"{path}: invalid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise BatsimError(f"{path}: expected an object with a 'jobs' list")
    profiles = doc.get("profiles") or {}
    jobs: list[Job] = []
    seen: set[int] = set()
    for k, raw in enumerate(doc["jobs"]):
        where = f"{path}: jobs[{k}]"
        try:
            name = str(raw["profile"])
            submit, res = float(raw["subtime"]), int(raw["res"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BatsimError(f"{where}: needs subtime, res and profile ({exc})") from None
        prof = profiles.get(name)
        if not isinstance(prof, dict):
            raise BatsimError(f"{where}: unknown profile {name!r}")
        kind = prof.get("type")
        if kind == "delay":
            run = float(prof["delay"])
        elif kind == "parallel_homogeneous":
            if speed_flops is None or not speed_flops > 0:
                raise BatsimError(f"{where}: profile {name!r} is parallel_homogeneous: give speed_flops (flops/s)")
            run = float(prof["cpu"]) / speed_flops
        else:
            raise BatsimError(f"{where}: profile {name!r} has type {kind!r}; supported: {', '.join(PROFILE_TYPES)}")
        wall = raw.get("walltime", -1)
        requested = float(wall) if wall is not None and float(wall) > 0 else run
        job_id = _job_id(raw.get("id"), k + 1)
        if job_id in seen:
            job_id = max(seen) + 1
        seen.add(job_id)
        if res <= 0 or run < 0 or submit < 0 or not math.isfinite(run):
            raise BatsimError(f"{where}: res must be positive, times non-negative")
        jobs.append(Job(job_id, submit, min(run, requested), requested, res))
    jobs.sort(key=lambda j: (j.submit_time, j.job_id))
    nb_res = int(doc.get("nb_res") or max((j.requested_procs for j in jobs), default=1))
    return jobs, nb_res


def write_batsim(
    path: str | Path, jobs: Sequence[Job], nb_res: int, *, workload: str = "w0", speed_flops: float | None = None
) -> None:
    """``jobs`` as a Batsim JSON workload: one ``delay`` profile per distinct run time, or
    ``parallel_homogeneous`` ones (``cpu = run time x speed_flops``) when ``speed_flops`` is given.
    Job ids are ``"<workload>!<job_id>"``; ``walltime`` is the estimate."""
    profiles: dict[str, dict[str, Any]] = {}
    out = []
    for j in jobs:
        if speed_flops is None:
            name = f"delay_{j.run_time:g}"
            profiles.setdefault(name, {"type": "delay", "delay": j.run_time})
        else:
            name = f"ph_{j.run_time:g}"
            profiles.setdefault(name, {"type": "parallel_homogeneous", "cpu": j.run_time * speed_flops, "com": 0})
        out.append(
            {
                "id": f"{workload}!{j.job_id}",
                "subtime": j.submit_time,
                "walltime": j.requested_time,
                "res": j.requested_procs,
                "profile": name,
            }
        )
    doc = {"nb_res": int(nb_res), "jobs": out, "profiles": profiles}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")
