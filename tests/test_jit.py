"""``metasched._jit``: the optimisation level metasched's kernels are compiled at, and ``move``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


_CALLEE = "from metasched._jit import njit\n\n\n@njit(cache=True)\ndef f():\n    return {value}\n"
_CALLER = (
    "import callee\nfrom callee import f\nfrom metasched._jit import drop_stale_cache, njit\n\n\n"
    "@njit(cache=True)\ndef g():\n    return f()\n\n\n"
    "DROPPED = drop_stale_cache(globals(), [callee.__file__])\n"
)


def _call(where: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(where), "NUMBA_CACHE_DIR": f"{where}/cache"}
    probe = "import caller; print(caller.g(), caller.DROPPED)"
    return subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_kernel_built_on_another_module_is_compiled_again_when_it_changes(tmp_path: Path) -> None:
    """numba keys a cached kernel by its own module's file only: a kernel that calls one from
    another module was loaded from the cache with the callee's old code after the callee alone
    changed (numba 0.6x; this test without the guard gets the old answer, 1, at the third call).
    ``drop_stale_cache`` forgets the module's index files when such a file changed, so the new
    code runs; with nothing changed it forgets nothing (the cache is used)."""
    (tmp_path / "callee.py").write_text(_CALLEE.format(value=1))
    (tmp_path / "caller.py").write_text(_CALLER)
    assert _call(tmp_path).split() == ["1", "False"]  # (nothing cached yet: the digest is kept)
    assert _call(tmp_path).split() == ["1", "False"]  # unchanged: the cache is used
    (tmp_path / "callee.py").write_text(_CALLEE.format(value=22))  # (another size: numba sees it)
    assert _call(tmp_path).split() == ["22", "True"]
    assert _call(tmp_path).split() == ["22", "False"]
