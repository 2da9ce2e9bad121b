"""``metasched._jit``: the optimisation level metasched's kernels are compiled at, and ``move``."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core.errors import TypingError

from metasched._jit import move, njit

PROBE = (
    "import metasched.policy.local._conservative_kernel, numba; "
    "print(int(numba.config.OPT), numba.config.OPT.is_opt_max)"
)


def _level(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_OPT"}
    if env_value is not None:
        env["NUMBA_OPT"] = env_value
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_kernels_compile_at_level_3_by_default() -> None:
    assert _level(None) == "3 False"


@pytest.mark.parametrize(("value", "expected"), [("1", "1 False"), ("0", "0 False")])
def test_a_level_in_the_environment_wins(value: str, expected: str) -> None:
    assert _level(value) == expected


# --- move: one memmove, overlapping ranges allowed ---------------------------------------------


@njit(cache=True)
def _moved(arr: np.ndarray, dst: int, src: int, count: int) -> np.ndarray:
    out = arr.copy()
    move(out, dst, src, count)
    return out


@st.composite
def _moves(draw: st.DrawFn) -> tuple[np.ndarray, int, int, int]:
    n = draw(st.integers(0, 40))
    count = draw(st.integers(0, n))
    dst = draw(st.integers(0, n - count))
    src = draw(st.integers(0, n - count))
    dtype = draw(st.sampled_from([np.float64, np.int64]))
    values = draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n))
    return np.array(values, dtype=dtype), dst, src, count


@settings(max_examples=300, deadline=None)
@given(_moves())
def test_move_is_a_slice_assignment_even_when_the_ranges_overlap(case: tuple[np.ndarray, int, int, int]) -> None:
    arr, dst, src, count = case
    expected = arr.copy()
    expected[dst : dst + count] = arr[src : src + count].copy()
    got = _moved(arr, dst, src, count)
    assert got.dtype == arr.dtype
    assert np.array_equal(got, expected)


def test_move_refuses_an_array_that_is_not_contiguous() -> None:
    @njit
    def strided(arr: np.ndarray) -> None:
        move(arr[::2], 0, 1, 1)

    with pytest.raises(TypingError):
        strided(np.zeros(8))
