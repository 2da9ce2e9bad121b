"""The optimisation level metasched's kernels are compiled at (``metasched._jit``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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


def test_kernels_compile_at_level_1_by_default() -> None:
    assert _level(None) == "1 False"


@pytest.mark.parametrize(("value", "expected"), [("3", "3 False"), ("0", "0 False")])
def test_a_level_in_the_environment_wins(value: str, expected: str) -> None:
    assert _level(value) == expected
