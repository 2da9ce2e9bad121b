import importlib
import inspect
import pkgutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

import metasched.policy.meta as meta
from metasched.policy.meta import SELECTOR_REGISTRY, BestFit, MachineSelector, MultiSite

frees = st.lists(st.integers(0, 12), min_size=1, max_size=6)


def test_every_selector_module_is_registered() -> None:
    found = set()
    for info in pkgutil.iter_modules(meta.__path__):
        module = importlib.import_module(f"{meta.__name__}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, MachineSelector) and not inspect.isabstract(obj) and obj.__module__ == module.__name__:
                found.add(obj)
    assert found == set(SELECTOR_REGISTRY.values())
    assert set(SELECTOR_REGISTRY) == {"best-fit", "multisite"}


def test_best_fit_hand_worked() -> None:
    bf = BestFit()
    sizes = [8, 8, 8]
    assert bf.select(2, [3, 5, 2], sizes) == ((2, 2),)
    assert bf.select(3, [3, 5, 2], sizes) == ((0, 3),)
    assert bf.select(4, [3, 5, 2], sizes) == ((1, 4),)
    assert bf.select(2, [4, 4, 0], sizes) == ((0, 2),)  # tie: lowest index
    assert bf.select(6, [3, 5, 2], sizes) is None
    assert not bf.can_ever_run(9, sizes)
    assert bf.can_ever_run(8, sizes)


def test_multisite_hand_worked() -> None:
    ms = MultiSite()
    sizes = [8, 8, 8]
    assert ms.select(5, [3, 5, 2], sizes) == ((1, 5),)  # whole on one machine first
    assert ms.select(6, [3, 5, 2], sizes) == ((1, 5), (0, 1))
    assert ms.select(10, [3, 5, 2], sizes) == ((1, 5), (0, 3), (2, 2))
    assert ms.select(11, [3, 5, 2], sizes) is None
    assert ms.select(5, [2, 3, 3], sizes) == ((1, 3), (2, 2))  # tie on free: lower index first
    assert MultiSite(max_parts=2).select(10, [3, 5, 2], sizes) is None
    assert ms.can_ever_run(24, sizes)
    assert not ms.can_ever_run(25, sizes)
    with pytest.raises(ValueError, match="max_parts"):
        MultiSite(max_parts=0)


@given(st.integers(1, 40), frees)
def test_best_fit_properties(procs: int, free: list[int]) -> None:
    alloc = BestFit().select(procs, free, [12] * len(free))
    fitting = [m for m, f in enumerate(free) if f >= procs]
    if not fitting:
        assert alloc is None
        return
    assert alloc is not None and len(alloc) == 1
    ((m, p),) = alloc
    assert p == procs
    best_left = min(free[k] - procs for k in fitting)
    assert free[m] - procs == best_left
    assert m == min(k for k in fitting if free[k] - procs == best_left)


@given(st.integers(1, 60), frees, st.one_of(st.none(), st.integers(1, 6)))
def test_multisite_properties(procs: int, free: list[int], max_parts: int | None) -> None:
    alloc = MultiSite(max_parts=max_parts).select(procs, free, [12] * len(free))
    ranked = sorted(free, reverse=True)
    limit = len(free) if max_parts is None else min(max_parts, len(free))
    if sum(ranked[:limit]) < procs:
        assert alloc is None
        return
    assert alloc is not None
    machines = [m for m, _ in alloc]
    assert len(set(machines)) == len(machines)
    assert sum(p for _, p in alloc) == procs
    assert all(0 < p <= free[m] for m, p in alloc)
    # Fewest machines: no k machines can hold the job if the k freest cannot.
    fewest = next(k for k in range(1, len(free) + 1) if sum(ranked[:k]) >= procs)
    assert len(alloc) == fewest
    if fewest == 1:
        assert alloc == BestFit().select(procs, free, [12] * len(free))
