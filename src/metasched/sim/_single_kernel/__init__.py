"""Compiled single-site simulations: accelerators of :func:`metasched.sim.replay.simulate` for the
policies that have one (see the README beside this file). The policy objects stay the definition:
:func:`accelerator` answers only for the exact classes and queue orders ported here, and
``tests/sim/test_single_kernel.py`` pins every accelerator to the Python driver and to the
reference simulator, schedule for schedule; every other policy runs on the Python driver."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from metasched.policy.base import LocalScheduler
from metasched.policy.local.conservative import ConservativeBackfill
from metasched.policy.local.easy import EasyBackfill

#: An accelerated run: (submit, run_time, requested_time, procs) sorted by ``(submit_time,
#: job_id)``, the machine's processors -> (start, end) in that order.
Runner = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]


def _run(
    loop: str, submit: np.ndarray, run_time: np.ndarray, req_time: np.ndarray, procs: np.ndarray, total: int
) -> tuple[np.ndarray, np.ndarray]:
    import importlib

    kernel = getattr(importlib.import_module(f"metasched.sim._single_kernel.{loop}"), f"{loop}_loop")
    start = np.full(submit.shape[0], np.nan)
    end = np.full(submit.shape[0], np.nan)
    kernel(submit, run_time, req_time, procs, total, start, end)  # (numba is imported only now)
    return start, end


#: The policies with a compiled whole simulation: exact class -> the module of its loop.
LOOPS: dict[type[LocalScheduler], str] = {EasyBackfill: "easy", ConservativeBackfill: "conservative"}


def accelerator(scheduler: LocalScheduler) -> Runner | None:
    """The compiled whole simulation of ``scheduler``, or ``None`` where there is none (a subclass,
    another queue order or another policy: the Python driver runs it, same schedule, slower)."""
    loop = LOOPS.get(type(scheduler))
    if loop is None or not scheduler.order.is_arrival_order:
        return None
    return functools.partial(_run, loop)
