"""Run the peer simulators on metasched's jobs: in this process (the reference's ``simulate``,
for its simulation time and its schedule) or as whole processes (their CPU seconds).

The peers live in ``$METASCHED_SHARED/peers`` (default ``../shared/peers``; README there); they are
read and run, never copied into the project."""

from __future__ import annotations

import gzip
import importlib.util
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from metasched.model.job import Job

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("METASCHED_SHARED", REPO.parent / "shared"))
PEERS = SHARED / "peers"
PYTHON2 = Path.home() / ".pyenv" / "versions" / "2.7.18" / "bin" / "python2.7"
#: metasched's scheduler keys -> the peers' names
PEER_KEY = {"easy": "easy", "conservative": "cons", "fcfs": "fcfs"}


def reference() -> ModuleType:
    """``ref_sim.py`` as a module (its ``simulate(jobs, P, policy)`` -> ``{job_id: start}``)."""
    spec = importlib.util.spec_from_file_location("ref_sim", PEERS / "ref_sim.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def as_reference_jobs(jobs: Sequence[Job]) -> list[list[float]]:
    """metasched's (normalised) jobs in the reference's form ``[id, submit, run, procs, estimate]``."""
    return [[j.job_id, j.submit_time, j.run_time, j.requested_procs, j.requested_time] for j in jobs]


def reference_run(jobs: Sequence[Job], procs: int, key: str) -> tuple[dict[int, float], float]:
    """The reference's schedule ``{job_id: start}`` and its simulation CPU seconds."""
    ref = reference()
    rows = as_reference_jobs(jobs)
    c0 = time.process_time()
    starts = ref.simulate(rows, procs, PEER_KEY[key])
    return {int(k): float(v) for k, v in starts.items()}, time.process_time() - c0


def plain_swf(path: Path, cache: Path) -> Path:
    """An uncompressed copy of ``path`` in ``cache`` (the peers read plain SWF only)."""
    if path.suffix != ".gz":
        return path
    target = cache / path.name.removesuffix(".gz")
    if not target.exists():
        cache.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(path.read_bytes()))
    return target


def child_cpu(cmd: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 1800) -> tuple[float, float]:
    """Run ``cmd`` to its end; its CPU seconds (user + system) and peak resident MB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(list(cmd), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, after.ru_maxrss / 1024


def reference_process(swf: Path, key: str, procs: int, n: int = 0) -> list[str]:
    return [sys.executable, str(PEERS / "ref_sim.py"), str(swf), PEER_KEY[key], str(n), str(procs)]


def pyss_process(swf: Path, key: str, procs: int) -> list[str]:
    return [str(PYTHON2), "-O", str(PEERS / "pyss_run.py"), str(swf), PEER_KEY[key], str(procs)]
