"""The assignment MIP: exact on small instances (against brute force), never worse than its start."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model.etc import makespan
from metasched.policy.mapping import REGISTRY, MinMin, MipSearch
from metasched.policy.mapping.mip import mip_assignment

pytest.importorskip("scipy")


def _brute(etc: np.ndarray, ready: np.ndarray) -> float:
    n, m = etc.shape
    return min(makespan(etc, ready, np.array(a)) for a in itertools.product(range(m), repeat=n))


def test_hand_worked_case() -> None:
    # Min-min spreads the short tasks (one per machine), then the long one lands after one (makespan 8);
    # the optimum pairs the long task with nothing: 0 -> {2}, 1 -> {0, 1} = max(6, 4) = 6.
    etc = np.array([[2.0, 2.0], [2.0, 2.0], [6.0, 9.0]])
    ready = np.zeros(2)
    assert makespan(etc, ready, MinMin().map(etc, ready)) == 8.0
    a, _nodes = mip_assignment(etc, ready, node_limit=100)
    assert a is not None and makespan(etc, ready, a) == 6.0


@settings(max_examples=25)
@given(
    st.integers(2, 6).flatmap(
        lambda n: st.integers(1, 3).flatmap(
            lambda m: st.lists(st.integers(1, 50), min_size=n * m, max_size=n * m).map(
                lambda v: np.array(v, dtype=float).reshape(n, m)
            )
        )
    )
)
def test_mip_with_enough_nodes_is_optimal_and_never_worse_than_its_start(etc: np.ndarray) -> None:
    ready = np.zeros(etc.shape[1])
    mapper = MipSearch(max_iterations=10_000)
    a = mapper.map(etc, ready)
    assert makespan(etc, ready, a) == pytest.approx(_brute(etc, ready), rel=1e-9)
    assert makespan(etc, ready, a) <= makespan(etc, ready, MinMin().map(etc, ready))


def test_registered_and_unplaceable_entries_respected() -> None:
    assert REGISTRY["mip"] is MipSearch
    etc = np.array([[np.inf, 3.0], [4.0, np.inf], [1.0, 1.0]])
    a = MipSearch().map(etc, np.zeros(2))
    assert np.isfinite(etc[np.arange(3), a]).all()
