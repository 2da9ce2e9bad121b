"""The metaqueue's real history as a workload: what ``metasched replay`` feeds the simulator.

From the store: every finished job (``done``) becomes a :class:`~metasched.model.job.Job` with
``submit_time`` relative to the first submission, ``attrs["after"]`` (its dependencies among
those jobs), ``attrs["kind"]``, ``attrs["run_s"]`` (``{site: run time}``: measured where it ran,
the learned estimate of its kind elsewhere, see :mod:`metasched.runtime.metaqueue.estimates`) and
``attrs["estimates"]`` (the learned estimates, what policies see). Each site's placeholders are
summarised by the instants (relative to the first submission) at which its placeholders started,
as many as ran there at once at most: the capacity the metaqueue really had, and when. Licences:
each job's ``attrs["licences"]``, each site's own limits and the global ones as configured now
(what the simulator is given, so a replay keeps the licence limits across sites).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from metasched.model.job import Job
from metasched.runtime.metaqueue.estimates import Estimates, job_kind
from metasched.runtime.metaqueue.states import JobState
from metasched.runtime.metaqueue.store import Store


@dataclass
class History:
    """Finished jobs as a workload, each site's placeholder starts, and what was left out (with why)."""

    jobs: list[Job]
    placeholder_starts: dict[str, list[float]]
    origin: float
    skipped: dict[str, int] = field(default_factory=dict)
    #: (kind, site) pairs with no run nor borrowable estimate: the measured time was reused there.
    assumed_same_speed: int = 0
    estimates: Estimates | None = None
    #: Each site's own licence limits and the global ones (``metasched licences``), as configured now.
    site_licences: dict[str, dict[str, int]] = field(default_factory=dict)
    licences: dict[str, int] = field(default_factory=dict)


def max_concurrent(intervals: list[tuple[float, float]]) -> int:
    """Largest number of ``[start, end)`` intervals that overlap at one instant."""
    points = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda p: (p[0], p[1]))
    best = cur = 0
    for _, d in points:
        cur += d
        best = max(best, cur)
    return best


def read_history(store: Store, sites: list[str] | None = None) -> History:
    """The finished part of the metaqueue as a workload (see the module docstring)."""
    rows = store.jobs()
    skipped: dict[str, int] = {}
    done = []
    for r in rows:
        if r["state"] == JobState.DONE and r["site"] and r["start_at"] is not None and r["end_at"] is not None:
            done.append(r)
        else:
            reason = r["state"] if r["state"] != JobState.DONE else "done without timing"
            skipped[reason] = skipped.get(reason, 0) + 1
    if not done:
        raise ValueError("the metaqueue has no finished job to replay")
    est = store.estimates()
    phs = store.placeholders()
    site_names = sorted({*(sites or []), *(r["site"] for r in done), *(p["site"] for p in phs)})
    origin = min(r["submit_at"] for r in done)
    kept = {r["id"] for r in done}
    deps = store.dependencies()
    assumed = 0
    jobs = []
    for r in done:
        kind = job_kind(r["name"], r["command"])
        measured = float(r["end_at"] - r["start_at"])
        table = {s: e for s in site_names if (e := est.estimate(kind, s)) is not None}
        run_s = {}
        for s in site_names:
            if s == r["site"]:
                run_s[s] = measured
            elif s in table:
                run_s[s] = table[s]
            else:
                run_s[s] = measured
                assumed += 1
        after = sorted(a for a in deps.get(r["id"], ()) if a in kept)
        jobs.append(
            Job(
                job_id=r["id"],
                submit_time=float(r["submit_at"] - origin),
                run_time=measured,
                requested_time=float(r["time_s"] or 0.0),
                requested_procs=int(r["cpus"]),
                attrs={
                    "kind": kind,
                    "after": after,
                    "run_s": run_s,
                    "estimates": table or dict(run_s),
                    "licences": dict(r["licences"] or {}),
                },
            )
        )
    starts: dict[str, list[float]] = {s: [] for s in site_names}
    spans: dict[str, list[tuple[float, float]]] = {s: [] for s in site_names}
    last = max(r["end_at"] for r in done)
    for p in phs:
        if p["started_at"] is None:
            continue
        starts[p["site"]].append(max(0.0, p["started_at"] - origin))
        spans[p["site"]].append((p["started_at"], p["ended_at"] or last))
    out = {}
    for s in site_names:
        n = max_concurrent(spans[s])
        out[s] = sorted(starts[s])[:n]
    site_licences = {s["name"]: dict(s["licences"] or {}) for s in store.sites()}
    return History(jobs, out, origin, skipped, assumed, est, site_licences, store.licences())
