"""ETC instances: the Braun et al. file format, range-based and CVB generators, SmartNet's two models.

Every generator takes a ``numpy.random.Generator`` from its caller (no global random state), so a
seed fixes the instance. Sources: Braun et al., JPDC 61 (2001) (file format, range-based
parameters); Ali et al., Tamkang JSE 3(3) (2000) (range-based and CVB methods; summarised in
``shared/data/etc/GENERATION.md``); Freund et al. 1998, seed 002 sections 3.2-3.3 (production and
academic models).
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path
from typing import Literal

import numpy as np

from metasched.model.etc import EtcInstance, FloatArray

Consistency = Literal["consistent", "inconsistent", "semi-consistent"]
_CONSISTENCY_ALIASES: dict[str, Consistency] = {
    "c": "consistent",
    "consistent": "consistent",
    "i": "inconsistent",
    "inconsistent": "inconsistent",
    "s": "semi-consistent",
    "semi-consistent": "semi-consistent",
    "semi": "semi-consistent",
    "partially-consistent": "semi-consistent",
}

#: Braun et al.'s ranges: R_task (hi, lo) and R_mach (hi, lo).
BRAUN_TASK_RANGE = {"hi": 3000.0, "lo": 100.0}
BRAUN_MACHINE_RANGE = {"hi": 1000.0, "lo": 10.0}
BRAUN_NAMES = tuple(f"u_{c}_{t}{m}.0" for c in "cis" for t in ("hi", "lo") for m in ("hi", "lo"))


def consistency_kind(name: str) -> Consistency:
    """Normalise a consistency name (``c``/``i``/``s`` or the full word)."""
    try:
        return _CONSISTENCY_ALIASES[name.lower()]
    except KeyError:
        raise ValueError(
            f"unknown consistency {name!r}; use one of consistent, inconsistent, semi-consistent"
        ) from None


def apply_consistency(etc: FloatArray, consistency: str) -> FloatArray:
    """Impose a consistency on a drawn matrix (in place, also returned).

    consistent: sort every row ascending (machine 0 fastest for every task); inconsistent: leave
    it; semi-consistent: sort the even columns 0, 2, 4, ... of every row among themselves (the
    rule of Braun et al.'s ``u_s_*`` files, checked in GENERATION.md).
    """
    kind = consistency_kind(consistency)
    if kind == "consistent":
        etc.sort(axis=1)
    elif kind == "semi-consistent":
        etc[:, 0::2] = np.sort(etc[:, 0::2], axis=1)
    return etc


def range_based(
    rng: np.random.Generator,
    n_tasks: int = 512,
    n_machines: int = 16,
    *,
    task_range: float = 3000.0,
    machine_range: float = 1000.0,
    consistency: str = "inconsistent",
    name: str = "",
) -> EtcInstance:
    """Range-based ETC (Ali et al. 2000): ``etc[i, j] = tau_i * r_ij``, tau ~ U[1, R_task), r ~ U[1, R_mach)."""
    if n_tasks < 1 or n_machines < 1:
        raise ValueError("need at least one task and one machine")
    if task_range < 1 or machine_range < 1:
        raise ValueError("heterogeneity ranges must be >= 1")
    tau = rng.uniform(1.0, task_range, size=(n_tasks, 1))
    r = rng.uniform(1.0, machine_range, size=(n_tasks, n_machines))
    etc = apply_consistency(tau * r, consistency)
    return EtcInstance(etc, name=name or f"range-{consistency_kind(consistency)}")


def braun_like(rng: np.random.Generator, kind: str, n_tasks: int = 512, n_machines: int = 16) -> EtcInstance:
    """A fresh matrix of one of Braun et al.'s 12 cases, e.g. ``kind="u_c_hihi"``."""
    parts = kind.removesuffix(".0").split("_")
    if len(parts) != 3 or parts[0] != "u" or len(parts[2]) != 4:
        raise ValueError(f"Braun case must look like u_c_hihi, got {kind!r}")
    task_h, mach_h = parts[2][:2], parts[2][2:]
    if task_h not in BRAUN_TASK_RANGE or mach_h not in BRAUN_MACHINE_RANGE:
        raise ValueError(f"heterogeneity must be hi or lo in {kind!r}")
    return range_based(
        rng,
        n_tasks,
        n_machines,
        task_range=BRAUN_TASK_RANGE[task_h],
        machine_range=BRAUN_MACHINE_RANGE[mach_h],
        consistency=parts[1],
        name=kind,
    )


def cvb(
    rng: np.random.Generator,
    n_tasks: int = 512,
    n_machines: int = 16,
    *,
    mean_task: float = 1000.0,
    task_cov: float = 0.6,
    machine_cov: float = 0.6,
    consistency: str = "inconsistent",
    machine_first: bool = False,
    name: str = "",
) -> EtcInstance:
    """Coefficient-of-variation-based ETC (Ali et al. 2000), gamma draws.

    Task-first: q_i ~ G(1/V_task^2, mean_task V_task^2); etc[i, j] ~ G(1/V_mach^2, q_i V_mach^2), so
    row i has mean q_i and COV V_mach. Machine-first (for low task / high machine heterogeneity):
    p_j ~ G(1/V_mach^2, mean_task V_mach^2); etc[i, j] ~ G(1/V_task^2, p_j V_task^2).
    "hi"/"lo" heterogeneity means a larger/smaller COV (e.g. 0.6 / 0.1).
    """
    if n_tasks < 1 or n_machines < 1:
        raise ValueError("need at least one task and one machine")
    if mean_task <= 0 or task_cov <= 0 or machine_cov <= 0:
        raise ValueError("mean_task and the coefficients of variation must be positive")
    a_task, a_mach = 1.0 / task_cov**2, 1.0 / machine_cov**2
    if machine_first:
        p = rng.gamma(a_mach, mean_task / a_mach, size=(1, n_machines))
        etc = rng.gamma(a_task, p / a_task, size=(n_tasks, n_machines))
    else:
        q = rng.gamma(a_task, mean_task / a_task, size=(n_tasks, 1))
        etc = rng.gamma(a_mach, q / a_mach, size=(n_tasks, n_machines))
    # A gamma draw can underflow to 0.0 for tiny shapes; an exactly free task is harmless.
    etc = apply_consistency(etc, consistency)
    return EtcInstance(etc, name=name or f"cvb-{consistency_kind(consistency)}")


#: COV used for "hi" / "lo" heterogeneity by :func:`cvb_like` (Ali et al. illustrate 0.1 .. 1; not a standard).
CVB_HETEROGENEITY = {"hi": 0.6, "lo": 0.1}


def cvb_like(
    rng: np.random.Generator, kind: str, n_tasks: int = 512, n_machines: int = 16, *, mean_task: float = 1000.0
) -> EtcInstance:
    """A CVB matrix named like the Braun cases, e.g. ``kind="c_lohi"`` (consistency, task, machine).

    Low task with high machine heterogeneity uses the machine-first variant, as Ali et al. advise.
    """
    parts = kind.split("_")
    if len(parts) != 2 or len(parts[1]) != 4:
        raise ValueError(f"CVB case must look like c_hilo, got {kind!r}")
    task_h, mach_h = parts[1][:2], parts[1][2:]
    if task_h not in CVB_HETEROGENEITY or mach_h not in CVB_HETEROGENEITY:
        raise ValueError(f"heterogeneity must be hi or lo in {kind!r}")
    return cvb(
        rng,
        n_tasks,
        n_machines,
        mean_task=mean_task,
        task_cov=CVB_HETEROGENEITY[task_h],
        machine_cov=CVB_HETEROGENEITY[mach_h],
        consistency=parts[0],
        machine_first=task_h == "lo" and mach_h == "hi",
        name=f"cvb_{kind}",
    )


def read_braun(path: str | Path, n_tasks: int = 512, n_machines: int = 16) -> EtcInstance:
    """Load a Braun et al. instance: one number per line, task-major (16 values per task).

    Accepts gzip or plain text, DOS or Unix line endings, and the Gogos et al. variant whose first
    line is a ``n_tasks n_machines 0`` header (then the header's shape is used).
    """
    p = Path(path)
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    lines = raw.decode("ascii").split()
    text_lines = raw.decode("ascii").splitlines()
    if text_lines and len(text_lines[0].split()) == 3:
        header = text_lines[0].split()
        n_tasks, n_machines = int(header[0]), int(header[1])
        lines = lines[3:]
    try:
        values = np.array([float(x) for x in lines])
    except ValueError as exc:
        raise ValueError(f"{p}: not a Braun ETC file ({exc})") from None
    if values.size != n_tasks * n_machines:
        raise ValueError(f"{p}: expected {n_tasks} x {n_machines} = {n_tasks * n_machines} numbers, got {values.size}")
    name = p.name.removesuffix(".gz")
    return EtcInstance(values.reshape(n_tasks, n_machines), name=name)


def write_braun(path: str | Path, instance: EtcInstance) -> None:
    """Write an instance in Braun et al.'s format (one value per line, task-major, 6 decimals)."""
    if not np.isfinite(instance.etc).all():
        raise ValueError("the Braun format has no way to say 'cannot run': the ETC matrix must be finite")
    Path(path).write_text("".join(f"{v:.6f}\n" for v in instance.etc.ravel()))


# --------------------------------------------------------------------------------- SmartNet models


class NasTable:
    """SmartNet's Table 2: run time of each NAS job (rows) on each machine (columns), inf = NA."""

    def __init__(self, jobs: tuple[str, ...], machines: tuple[str, ...], times: FloatArray) -> None:
        if times.shape != (len(jobs), len(machines)):
            raise ValueError("NAS table shape does not match its job and machine names")
        self.jobs = jobs
        self.machines = machines
        self.times = times

    @classmethod
    def read(cls, path: str | Path) -> NasTable:
        """Read ``smartnet_etc.csv`` (comment lines start with ``#``; ``NA`` = cannot run)."""
        p = Path(path)
        with p.open(newline="") as f:
            rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
        if len(rows) < 2 or rows[0][0] != "job":
            raise ValueError(f"{p}: expected a header row starting with 'job'")
        machines = tuple(rows[0][1:])
        jobs = tuple(r[0] for r in rows[1:])
        try:
            times = np.array([[np.inf if v.strip() == "NA" else float(v) for v in r[1:]] for r in rows[1:]])
        except ValueError as exc:
            raise ValueError(f"{p}: bad number ({exc})") from None
        if times.shape != (len(jobs), len(machines)):
            raise ValueError(f"{p}: ragged rows")
        return cls(jobs, machines, times)


def smartnet_production(
    rng: np.random.Generator, table: NasTable, n_tasks: int = 100, n_machines: int = 20
) -> EtcInstance:
    """SmartNet's production model (seed 002 section 3.2).

    Each machine is one of the table's machines drawn uniformly with replacement, each task one of
    its jobs drawn uniformly; the ETC entry is the table's time (inf where NA). If a drawn task kind
    could run on none of the drawn machines, the machine draw is repeated (the paper is silent;
    with the NAS table this happens with probability below 1e-10).
    """
    n_jobs, n_kinds = table.times.shape
    kinds = rng.integers(0, n_jobs, size=n_tasks)
    for _ in range(1000):
        machines = rng.integers(0, n_kinds, size=n_machines)
        etc = table.times[np.ix_(kinds, machines)]
        if np.isfinite(etc).any(axis=1).all():
            return EtcInstance(
                etc,
                name="smartnet-production",
                task_kinds=tuple(table.jobs[k] for k in kinds),
                machine_kinds=tuple(table.machines[k] for k in machines),
            )
    raise ValueError("could not draw machines on which every task can run; the NAS table has too many NA")


def smartnet_academic(
    rng: np.random.Generator,
    n_tasks: int = 100,
    n_machines: int = 20,
    *,
    task_min: float = 10.0,
    task_mean: float = 1000.0,
    speed_min: float = 1.0,
    speed_mean: float = 5.0,
) -> EtcInstance:
    """SmartNet's academic model (seed 002 section 3.3).

    Task times are shifted exponentials (minimum ``task_min``, mean ``task_mean``); machine
    relative speeds likewise (minimum ``speed_min``, mean ``speed_mean``); ``etc[i, j] = t_i / s_j``,
    so faster machines run every task faster (a consistent matrix).
    """
    if not (0 < task_min < task_mean and 0 < speed_min < speed_mean):
        raise ValueError("need 0 < minimum < mean for task times and machine speeds")
    t = task_min + rng.exponential(task_mean - task_min, size=(n_tasks, 1))
    s = speed_min + rng.exponential(speed_mean - speed_min, size=(1, n_machines))
    return EtcInstance(t / s, name="smartnet-academic")


def actual_times(rng: np.random.Generator, etc: FloatArray, sigma: float) -> FloatArray:
    """Actual run times around the estimates (seed 002 section 3.4).

    Each finite entry is drawn from Normal(estimate, sigma x estimate) truncated to positive values
    (a non-positive draw is redrawn); ``inf`` stays ``inf``; ``sigma = 0`` returns the estimates.
    """
    if sigma < 0:
        raise ValueError("sigma must be non-negative")
    out = np.array(etc, dtype=np.float64, copy=True)
    finite = np.isfinite(out) & (out > 0)
    if sigma == 0 or not finite.any():
        return out
    mean = out[finite]
    draw = rng.normal(mean, sigma * mean)
    bad = draw <= 0
    while bad.any():
        draw[bad] = rng.normal(mean[bad], sigma * mean[bad])
        bad = draw <= 0
    out[finite] = draw
    return out
