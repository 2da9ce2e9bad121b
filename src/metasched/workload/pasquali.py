"""Synthetic grids and job streams of seed 004 section 5 (Pasquali et al. 2010), seeded.

Paper settings (defaults): 5,000 jobs, exponential inter-arrival of mean ``Ta`` (``Ta = 0``: all
jobs at 0); uniform ``estimated`` [8000, 10000], ``benchmark`` [100, 500] (jobs and machines),
``margin`` [1500, 5500], ``CPU`` [4, 32] (jobs and machines), ``licences_ratio`` [50%, 70%]; 30% of
jobs need licences, 30% have no deadline; ``deadline = submission + estimated + margin``; four
clusters of 120, 60, 30 and 15 machines.

Choices where the paper is silent, all parameters of :class:`PasqualiParams`:

* ``n_licence_types`` (|L|) = 8; a licence-using job asks for a uniform 1..``max_licences_per_job``
  (= 3) distinct licence types.
* Licence pools are per cluster: copies of licence ``l`` in cluster ``c`` =
  ``round(ratio_l * machines of c able to run l)`` (at least 1 when some machine can), with one
  ``ratio_l`` per licence drawn in [50%, 70%] (the paper's "percentage of the number of machines
  able to run it"; per cluster because licence contention is reported per cluster).
* Every machine can run every licence (``machine_licence_prob = 1``: the paper's "without loss of
  generality ... all the grid machines are able to run all the available licenses").
* User classes Gold / Silver / Regular with probabilities 0.2 / 0.3 / 0.5 (not in section 5).
* The estimate is exact: ``run_time = requested_time`` (the paper has only ``estimated``).
* Job CPUs are drawn in [4, 32] then capped at the widest machine of the grid (so every job fits).
* Continuous draws for estimate, benchmark and margin; integer draws for CPUs.
* The time unit of ``Ta`` (disputed: the paper says "simulator time unit"): ``ta_unit_s`` seconds,
  1 by default (``Ta`` in seconds, like the estimates and margins). The stream of one seed is the
  same whatever the unit, its gaps scaled by ``ta_unit_s`` (so readings compare paired). Only the
  unit of ``Ta`` is a parameter: were estimates and margins in the same unit, any choice of unit
  would only rename the time axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metasched.model.grid import Cluster, Machine
from metasched.model.job import Job
from metasched.model.licence import Licence
from metasched.model.qos import QOS_KEY, JobQos, UserClass


@dataclass(frozen=True, slots=True)
class PasqualiParams:
    """Every knob of the section-5 generator (see the module docstring for the defaults' origin)."""

    n_jobs: int = 5000
    mean_interarrival_s: float = 5.0
    estimated_s: tuple[float, float] = (8000.0, 10000.0)
    benchmark: tuple[float, float] = (100.0, 500.0)
    margin_s: tuple[float, float] = (1500.0, 5500.0)
    cpus: tuple[int, int] = (4, 32)
    licence_ratio: tuple[float, float] = (0.5, 0.7)
    p_licence: float = 0.3
    p_no_deadline: float = 0.3
    cluster_sizes: tuple[int, ...] = (120, 60, 30, 15)
    n_licence_types: int = 8
    max_licences_per_job: int = 3
    machine_licence_prob: float = 1.0
    user_class_probs: tuple[float, float, float] = (0.2, 0.3, 0.5)
    ta_unit_s: float = 1.0

    def __post_init__(self) -> None:
        if self.n_jobs < 0:
            raise ValueError(f"n_jobs must be >= 0, got {self.n_jobs}")
        if self.mean_interarrival_s < 0:
            raise ValueError(f"mean inter-arrival Ta must be >= 0, got {self.mean_interarrival_s}")
        if not self.ta_unit_s > 0:
            raise ValueError(f"the time unit of Ta must be a positive number of seconds, got {self.ta_unit_s}")
        for name in ("estimated_s", "benchmark", "margin_s", "cpus", "licence_ratio"):
            lo, hi = getattr(self, name)
            if not lo <= hi:
                raise ValueError(f"{name}: low {lo} > high {hi}")
        if self.estimated_s[0] <= 0 or self.benchmark[0] <= 0 or self.cpus[0] < 1:
            raise ValueError("estimated_s, benchmark and cpus must be positive")
        if not 0 <= self.p_licence <= 1 or not 0 <= self.p_no_deadline <= 1:
            raise ValueError("p_licence and p_no_deadline must be probabilities")
        if not 0 < self.machine_licence_prob <= 1:
            raise ValueError(f"machine_licence_prob must be in (0, 1], got {self.machine_licence_prob}")
        if self.n_licence_types < 0 or (self.p_licence > 0 and self.n_licence_types == 0):
            raise ValueError("n_licence_types must be >= 1 when jobs need licences")
        if not 1 <= self.max_licences_per_job <= max(self.n_licence_types, 1):
            raise ValueError(
                f"max_licences_per_job must be in 1..{self.n_licence_types}, got {self.max_licences_per_job}"
            )
        if not self.cluster_sizes or min(self.cluster_sizes) < 1:
            raise ValueError(f"cluster_sizes must be positive, got {self.cluster_sizes}")
        if abs(sum(self.user_class_probs) - 1.0) > 1e-9 or min(self.user_class_probs) < 0:
            raise ValueError(f"user_class_probs must be a distribution, got {self.user_class_probs}")


def generate_grid(params: PasqualiParams, rng: np.random.Generator) -> list[Cluster]:
    """Clusters ``Cluster1..ClusterN`` of random machines and their licence pools."""
    n_lic = params.n_licence_types
    ratios = rng.uniform(*params.licence_ratio, size=n_lic)
    clusters = []
    for c, size in enumerate(params.cluster_sizes):
        cpus = rng.integers(params.cpus[0], params.cpus[1] + 1, size=size)
        bench = rng.uniform(*params.benchmark, size=size)
        can = rng.random((size, n_lic)) < params.machine_licence_prob
        machines = tuple(
            Machine(
                name=f"c{c + 1}m{i}",
                cpus=int(cpus[i]),
                benchmark=float(bench[i]),
                licences=frozenset(int(lic) for lic in np.flatnonzero(can[i])),
            )
            for i in range(size)
        )
        able = can.sum(axis=0)
        copies = [int(max(1, round(ratios[lic] * able[lic]))) if able[lic] else 0 for lic in range(n_lic)]
        licences = tuple(Licence(name=f"lic{lic}", copies=copies[lic]) for lic in range(n_lic))
        clusters.append(Cluster(name=f"Cluster{c + 1}", machines=machines, licences=licences))
    return clusters


def generate_jobs(params: PasqualiParams, clusters: list[Cluster], rng: np.random.Generator) -> list[Job]:
    """The job stream; every job can run on some machine of ``clusters`` (else ``ValueError``)."""
    n = params.n_jobs
    ta = params.mean_interarrival_s
    gaps = rng.exponential(ta, size=n) if ta > 0 else np.zeros(n)
    if params.ta_unit_s != 1.0:
        gaps *= params.ta_unit_s
    submit = np.cumsum(gaps)
    estimated = rng.uniform(*params.estimated_s, size=n)
    bench = rng.uniform(*params.benchmark, size=n)
    margin = rng.uniform(*params.margin_s, size=n)
    widest = max(m.cpus for c in clusters for m in c.machines)
    cpus = np.minimum(rng.integers(params.cpus[0], params.cpus[1] + 1, size=n), widest)
    has_deadline = rng.random(n) >= params.p_no_deadline
    needs_licence = rng.random(n) < params.p_licence
    users = rng.choice(3, size=n, p=list(params.user_class_probs))
    jobs = []
    for i in range(n):
        mask = 0
        if needs_licence[i]:
            for _ in range(100):
                k = int(rng.integers(1, params.max_licences_per_job + 1))
                chosen = rng.choice(params.n_licence_types, size=k, replace=False)
                mask = sum(1 << int(lic) for lic in chosen)
                if any(c.can_host(int(cpus[i]), mask) for c in clusters):
                    break
            else:
                raise ValueError(f"job {i}: no licence set of its size fits a machine; raise machine_licence_prob")
        est = float(estimated[i])
        sub = float(submit[i])
        qos = JobQos(
            deadline=sub + est + float(margin[i]) if has_deadline[i] else None,
            licence_mask=mask,
            user_class=UserClass(int(users[i])),
            benchmark=float(bench[i]),
        )
        jobs.append(
            Job(
                job_id=i,
                submit_time=sub,
                run_time=est,
                requested_time=est,
                requested_procs=int(cpus[i]),
                attrs={QOS_KEY: qos},
            )
        )
    return jobs
