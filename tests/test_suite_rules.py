"""The test command must not hang or fail on the machine's load (issue 33)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def test_every_test_has_a_timeout(pytestconfig: pytest.Config) -> None:
    assert float(pytestconfig.getini("timeout")) >= 60
    assert pytestconfig.getini("timeout_method") == "thread"  # interrupts tests blocked in C code, under xdist too


def test_hypothesis_has_no_deadline_suite_wide() -> None:
    assert settings.default.deadline is None


@settings(max_examples=3)
@given(st.integers())
def test_a_test_setting_its_own_examples_keeps_no_deadline(n: int) -> None:
    assert settings().deadline is None
