"""Run-time estimation: learned constants, approximate formulas, power-law interpolation, borrowing."""

from __future__ import annotations

import numpy as np
import pytest

from metasched.model.estimate import Run, RuntimeEstimator, holdout_error


def nm(p: dict[str, float]) -> float:  # type: ignore[type-arg]
    return p["n"] * p["m"]


def test_the_constant_of_an_exact_formula_is_learned_and_extrapolates() -> None:
    est = RuntimeEstimator()
    est.set_formula("matmul", "a", lambda p: p["n"] * p["m"])
    for n, m in [(10, 20), (30, 5), (7, 7)]:
        est.observe(Run("matmul", "a", {"n": n, "m": m}, 2.5 * n * m))
    assert est.estimate("matmul", "a", {"n": 1000, "m": 300}) == pytest.approx(2.5 * 1000 * 300, rel=1e-9)


def test_one_run_is_enough_for_the_constant() -> None:
    est = RuntimeEstimator()
    est.set_formula("k", "a", lambda p: p["n"] ** 2)
    with pytest.raises(KeyError, match="constant is unknown"):
        est.estimate("k", "a", {"n": 3})
    est.observe(Run("k", "a", {"n": 4}, 32.0))
    assert est.estimate("k", "a", {"n": 10}) == pytest.approx(200.0)


def test_an_approximate_formula_gets_corrected() -> None:
    est = RuntimeEstimator()
    est.set_formula("k", "a", lambda p: p["n"])  # the truth is 3 n^1.5
    for n in np.geomspace(10, 1000, 30):
        est.observe(Run("k", "a", {"n": float(n)}, 3 * n**1.5))
    for n in (50.0, 500.0):
        assert est.estimate("k", "a", {"n": n}) == pytest.approx(3 * n**1.5, rel=0.05)


def test_without_a_formula_a_power_law_interpolates_and_extrapolates() -> None:
    est = RuntimeEstimator(ridge=0.0)
    for n in np.geomspace(10, 100, 8):
        for m in (1.0, 2.0, 4.0):
            est.observe(Run("sim", "a", {"n": float(n), "m": m}, 0.01 * n**2 * m))
    assert est.estimate("sim", "a", {"n": 40.0, "m": 3.0}) == pytest.approx(0.01 * 1600 * 3, rel=1e-6)
    assert est.estimate("sim", "a", {"n": 300.0, "m": 8.0}) == pytest.approx(0.01 * 90000 * 8, rel=1e-6)


def test_a_machine_with_no_runs_of_a_kind_borrows_from_a_comparable_machine() -> None:
    est = RuntimeEstimator()
    for kind, t in (("x", 10.0), ("y", 3.0)):
        est.observe(Run(kind, "fast", {"n": 1.0}, t))
        est.observe(Run(kind, "slow", {"n": 1.0}, 2 * t))
    est.observe(Run("z", "fast", {"n": 1.0}, 7.0))
    assert est.estimate("z", "slow", {"n": 1.0}) == pytest.approx(14.0)
    with pytest.raises(KeyError):
        est.estimate("w", "slow", {"n": 1.0})
    etc = est.etc_matrix([("z", {"n": 1.0}), ("w", {"n": 1.0})], ["fast", "slow"])
    assert etc[0].tolist() == pytest.approx([7.0, 14.0]) and np.isinf(etc[1]).all()


def test_bad_runs_are_refused() -> None:
    est = RuntimeEstimator()
    with pytest.raises(ValueError, match="positive"):
        est.observe(Run("k", "a", {"n": 1.0}, 0.0))
    with pytest.raises(ValueError, match="parameter 'n'"):
        est.observe(Run("k", "a", {"n": -1.0}, 1.0))


def test_holdout_error_on_noisy_runs_is_small_with_the_formula() -> None:
    rng = np.random.default_rng(0)
    runs = []
    for _ in range(200):
        n, m = rng.uniform(10, 1000), rng.uniform(1, 50)
        runs.append(Run("k", "a", {"n": n, "m": m}, 0.2 * n * m * rng.lognormal(0, 0.1)))

    def with_formula() -> RuntimeEstimator:
        e = RuntimeEstimator()
        e.set_formula("k", "a", nm)
        return e

    err = holdout_error(with_formula, runs, 0.25, np.random.default_rng(1))
    assert err.n_test == 50 and err.median < 0.1 and err.mean < 0.12
    plain = holdout_error(RuntimeEstimator, runs, 0.25, np.random.default_rng(1))
    assert plain.median < 0.15  # the power law finds n^1 m^1 by itself
