"""Run-time estimation from observed runs: the ETC entries of a live system.

Source: seed 002 section 2.2. Per (task kind, machine) the user may give a time-complexity
formula of the task's input parameters with a constant to learn (``alpha * n * m``); SmartNet
"uses interpolation and extrapolation algorithms to extend rote learning of task execution
times if either the parameters or the function are missing or only approximately correct".

Our model, per (kind, machine), fitted by least squares in log space (run times are positive and
their errors multiplicative)::

    log runtime = log formula(params) + c0 + sum_k c_k log params_k

* With a formula and few runs only ``c0`` is learned: ``alpha = exp(c0)`` is the geometric mean
  of ``runtime / formula``.
* With enough runs (``len(params) + 2``) the ``c_k`` are learned too, with a ridge penalty that
  keeps them at 0 unless the data disagree: an approximate formula gets a power-law correction,
  and without a formula (``formula = 1``) this is a power-law fit over the parameters, which
  interpolates and extrapolates.
* A (kind, machine) with no runs borrows the kind's estimate on another machine, scaled by the
  two machines' median speed ratio over the kinds both have run (rote learning across machines).

Pure: no clock, no I/O; the live metaqueue records runs with :meth:`RuntimeEstimator.observe` and
reads :meth:`RuntimeEstimator.etc_matrix` before mapping.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

Params = Mapping[str, float]
Formula = Callable[[Params], float]


@dataclass(frozen=True, slots=True)
class Run:
    """One observed run: what ran where, with which input parameters, and how long it took (s)."""

    kind: str
    machine: str
    params: Params
    runtime: float


@dataclass
class _Fit:
    keys: tuple[str, ...]
    coef: np.ndarray  # [c0, c_1, ..., c_d]


@dataclass
class RuntimeEstimator:
    """Learns run times per (task kind, machine); see the module docstring for the model.

    Invariant: with a formula and runs whose times are exactly ``alpha * formula``, the estimate is
    exactly ``alpha * formula`` (up to rounding) for any parameters.
    ``ridge``: penalty on the power-law correction exponents of a formula (0 = plain least squares);
    without a formula the exponents are fitted freely.
    """

    ridge: float = 1.0
    formulas: dict[tuple[str, str], Formula] = field(default_factory=dict)
    runs: dict[tuple[str, str], list[Run]] = field(default_factory=dict)
    _fits: dict[tuple[str, str], _Fit] = field(default_factory=dict, repr=False)

    def set_formula(self, kind: str, machine: str, formula: Formula) -> None:
        """The user's complexity formula for ``kind`` on ``machine`` (any positive function of the params)."""
        self.formulas[(kind, machine)] = formula
        self._fits.pop((kind, machine), None)

    def observe(self, run: Run) -> None:
        """Record a finished run."""
        if not (run.runtime > 0 and math.isfinite(run.runtime)):
            raise ValueError(f"run time must be positive and finite, got {run.runtime}")
        _check_params(run.params)
        self.runs.setdefault((run.kind, run.machine), []).append(run)
        self._fits.pop((run.kind, run.machine), None)

    def observe_all(self, runs: Sequence[Run]) -> None:
        for r in runs:
            self.observe(r)

    def _base(self, kind: str, machine: str, params: Params) -> float:
        f = self.formulas.get((kind, machine))
        if f is None:
            return 0.0
        v = float(f(params))
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"formula for {kind!r} on {machine!r} gave {v} for {dict(params)}; it must be positive")
        return math.log(v)

    def _fit(self, kind: str, machine: str) -> _Fit | None:
        import numpy as np  # (on first use: the metaqueue client imports this module)

        key = (kind, machine)
        if key in self._fits:
            return self._fits[key]
        runs = self.runs.get(key)
        if not runs:
            return None
        keys = tuple(sorted(runs[0].params))
        if any(tuple(sorted(r.params)) != keys for r in runs):
            raise ValueError(f"runs of {kind!r} on {machine!r} do not all have the same parameters {keys}")
        y = np.array([math.log(r.runtime) - self._base(kind, machine, r.params) for r in runs])
        x = np.array([[math.log(r.params[k]) for k in keys] for r in runs]).reshape(len(runs), len(keys))
        if len(runs) >= len(keys) + 2 and keys:
            # Centre the logs so the ridge shrinks exponents, not the level.
            mean_x = x.mean(axis=0)
            xc = x - mean_x
            # The ridge pulls a formula's correction towards "the formula is right"; without a
            # formula the exponents are the model itself and are left free.
            penalty = self.ridge if key in self.formulas else 1e-9
            a = xc.T @ xc + penalty * np.eye(len(keys))
            c = np.linalg.solve(a, xc.T @ (y - y.mean()))
            c0 = y.mean() - float(mean_x @ c)
            coef = np.concatenate([[c0], c])
        else:
            coef = np.concatenate([[y.mean()], np.zeros(len(keys))])
        fit = _Fit(keys, coef)
        self._fits[key] = fit
        return fit

    def _direct(self, kind: str, machine: str, params: Params) -> float | None:
        import numpy as np  # (on first use: the metaqueue client imports this module)

        fit = self._fit(kind, machine)
        if fit is None:
            return None
        missing = [k for k in fit.keys if k not in params]
        if missing:
            raise ValueError(f"parameters {missing} needed to estimate {kind!r} on {machine!r}")
        logs = np.array([math.log(params[k]) for k in fit.keys])
        return math.exp(self._base(kind, machine, params) + fit.coef[0] + float(fit.coef[1:] @ logs))

    def machine_ratio(self, a: str, b: str) -> float | None:
        """Median over kinds run on both machines of (time on ``a``) / (time on ``b``), at ``b``'s runs' params."""
        import numpy as np  # (on first use: the metaqueue client imports this module)

        ratios = []
        for (kind, mach), runs in self.runs.items():
            if mach != b or (kind, a) not in self.runs:
                continue
            for r in runs:
                ea = self._direct(kind, a, r.params)
                eb = self._direct(kind, b, r.params)
                if ea is not None and eb is not None:
                    ratios.append(ea / eb)
        return float(np.median(ratios)) if ratios else None

    def estimate(self, kind: str, machine: str, params: Params) -> float:
        """Expected run time of ``kind`` on ``machine`` with ``params``; ``KeyError`` if nothing is known."""
        import numpy as np  # (on first use: the metaqueue client imports this module)

        _check_params(params)
        direct = self._direct(kind, machine, params)
        if direct is not None:
            return direct
        # Borrow from another machine that ran this kind, scaled by the machines' speed ratio.
        borrowed = []
        for k, other in sorted(self.runs):
            if k != kind or other == machine:
                continue
            ratio = self.machine_ratio(machine, other)
            est = self._direct(kind, other, params)
            if ratio is not None and est is not None:
                borrowed.append(ratio * est)
        if borrowed:
            return float(np.exp(np.mean(np.log(borrowed))))
        if (kind, machine) in self.formulas:
            raise KeyError(f"no runs of {kind!r} on {machine!r} yet: the formula's constant is unknown")
        raise KeyError(f"no runs of {kind!r} on {machine!r} nor on a comparable machine")

    def etc_matrix(self, tasks: Sequence[tuple[str, Params]], machines: Sequence[str]) -> np.ndarray:
        """ETC matrix for ``tasks`` (kind, params) on ``machines``; ``inf`` where nothing is known."""
        import numpy as np  # (on first use: the metaqueue client imports this module)

        out = np.full((len(tasks), len(machines)), np.inf)
        for i, (kind, params) in enumerate(tasks):
            for j, mach in enumerate(machines):
                with contextlib.suppress(KeyError):
                    out[i, j] = self.estimate(kind, mach, params)
        return out


def _check_params(params: Params) -> None:
    for k, v in params.items():
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"parameter {k!r} must be positive and finite (it enters a power law), got {v}")


@dataclass(frozen=True, slots=True)
class HoldoutError:
    """Relative errors |estimate - actual| / actual over held-out runs."""

    n_train: int
    n_test: int
    mean: float
    median: float
    p90: float


def holdout_error(
    make: Callable[[], RuntimeEstimator], runs: Sequence[Run], test_fraction: float, rng: np.random.Generator
) -> HoldoutError:
    """Train a fresh estimator (``make()``) on a random part of ``runs``, measure it on the rest."""
    import numpy as np  # (on first use: the metaqueue client imports this module)

    if not 0 < test_fraction < 1:
        raise ValueError("test_fraction must be in (0, 1)")
    idx = rng.permutation(len(runs))
    n_test = max(1, round(test_fraction * len(runs)))
    test, train = idx[:n_test], idx[n_test:]
    est = make()
    est.observe_all([runs[i] for i in train])
    errs = []
    for i in test:
        r = runs[i]
        try:
            errs.append(abs(est.estimate(r.kind, r.machine, r.params) - r.runtime) / r.runtime)
        except KeyError:
            errs.append(math.inf)
    e = np.array(errs)
    return HoldoutError(len(train), len(test), float(e.mean()), float(np.median(e)), float(np.quantile(e, 0.9)))
