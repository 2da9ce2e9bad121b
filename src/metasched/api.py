"""The Python API for notebooks: read a trace, describe (or pick) a platform, simulate policies.

>>> import metasched
>>> platform = metasched.Platform.from_toml("sites.toml")            # or metasched.load_platform("sabin2003")
>>> jobs = metasched.read_swf("trace.swf.gz")
>>> result = metasched.simulate(jobs, platform, "completion-time:k=2")
>>> result.summary["grid"]["awrt"], result.to_pandas().head()

Everything here is a thin wrapper over :mod:`metasched.sim.gridsim` (the driver the CLI's
``simulate --sites`` runs), so a notebook and the command give the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metasched.model.job import Job
from metasched.model.platform import Platform
from metasched.policy.meta.registry import PolicySpec, parse_policy
from metasched.sim.gridsim import GridSimResult, assign_homes, assign_kinds, simulate_platform
from metasched.workload.swf import Workload
from metasched.workload.swf import read_swf as _read_swf

#: What :func:`simulate` returns: per-job columns (``.columns()``, ``.to_pandas()``) and ``.summary``.
Result = GridSimResult


def read_swf(path: str | Path, *, allow_overrun: bool = False, max_procs: int | None = None) -> Workload:
    """An SWF trace (``.swf`` or ``.swf.gz``), normalised: ``.jobs``, ``.max_procs``, ``.header``."""
    return _read_swf(path, allow_overrun=allow_overrun, max_procs=max_procs)


def load_platform(name_or_path: str | Path) -> Platform:
    """A preset platform by name (``metasched platforms`` lists them) or a ``sites.toml`` path."""
    from metasched.model.platform_file import load_platform as from_file
    from metasched.model.platform_file import load_preset, preset_names

    if str(name_or_path) in preset_names():
        return load_preset(str(name_or_path))
    return from_file(name_or_path)


def simulate(
    workload: Workload | Sequence[Job] | str | Path,
    platform: Platform | str | Path,
    policy: str | PolicySpec = "least-load",
    *,
    home: str | None = None,
    kinds: str | None = None,
    seed: int = 1,
) -> Result:
    """Run ``workload`` over ``platform`` under ``policy`` (``NAME[:key=value,...]``).

    ``home``: ``"partition"`` or ``"round-robin"`` to set the jobs' home sites (default: keep
    them, round robin for jobs that have none); ``kinds``: ``"executable"``, ``"queue"``,
    ``"random"`` (from ``seed``) or ``"none"`` to set their kinds (default: keep them).
    """
    plat = platform if isinstance(platform, Platform) else load_platform(platform)
    if isinstance(workload, str | Path):
        workload = read_swf(workload)
    jobs = list(workload.jobs if isinstance(workload, Workload) else workload)
    if home is not None:
        jobs, _ = assign_homes(jobs, plat, home)
    elif any(j.home_site < 0 for j in jobs):
        jobs, _ = assign_homes(jobs, plat, "round-robin")
    if kinds is not None:
        jobs, _ = assign_kinds(jobs, plat, kinds, seed)
    spec = parse_policy(policy) if isinstance(policy, str) else policy
    return simulate_platform(jobs, plat, spec)


def compare(
    workload: Workload | Sequence[Job] | str | Path,
    platform: Platform | str | Path,
    policies: Sequence[str],
    **kwargs: Any,
) -> list[Result]:
    """:func:`simulate` for each of ``policies`` (same jobs); the results in order."""
    return [simulate(workload, platform, p, **kwargs) for p in policies]
