"""The safe formula evaluator: exact values, refused constructs named, bad parameters reported."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metasched.model.formula import ExpressionFormula, FormulaError


def test_values() -> None:
    f = ExpressionFormula("0.5 * n**2 + 3")
    assert f.names == {"n"}
    assert f({"n": 4}) == 11.0
    assert ExpressionFormula("max(n, m) / 2 - -1")({"n": 2, "m": 6}) == 4.0
    assert ExpressionFormula("log2(n) * ceil(m / 3) + n // 3 + n % 3")({"n": 8, "m": 4}) == 3 * 2 + 2 + 2
    assert ExpressionFormula("12")({}) == 12.0


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("__import__('os').system('true')", "only these functions"),
        ("n.__class__", "Attribute"),
        ("[1][0]", "Subscript"),
        ("'a' * 3", "only numbers"),
        ("n if n else 1", "IfExp"),
        ("n < 3", "Compare"),
        ("lambda: 1", "Lambda"),
        ("exp", "is a function"),
        ("max(a=1)", "positional"),
        ("1 +", "not an arithmetic expression"),
        ("True + 1", "only numbers"),
    ],
)
def test_refused(text: str, named: str) -> None:
    with pytest.raises(FormulaError, match=named):
        ExpressionFormula(text)


def test_evaluation_errors() -> None:
    with pytest.raises(FormulaError, match="needs parameter"):
        ExpressionFormula("a * n")({"n": 1})
    with pytest.raises(FormulaError, match="division by zero"):
        ExpressionFormula("1 / n")({"n": 0})
    with pytest.raises(FormulaError, match="exponent"):
        ExpressionFormula("n ** 1000")({"n": 2})
    with pytest.raises(FormulaError, match="gave"):
        ExpressionFormula("exp(n) * exp(n)")({"n": 700})
    with pytest.raises(FormulaError):
        ExpressionFormula("log(n)")({"n": -1})


@given(st.floats(0.1, 1e3), st.floats(0.1, 1e3), st.floats(0.1, 10))
def test_matches_python_arithmetic(n: float, m: float, a: float) -> None:
    got = ExpressionFormula("a * n**2 + sqrt(m) - n / m")({"n": n, "m": m, "a": a})
    assert math.isclose(got, a * n**2 + math.sqrt(m) - n / m, rel_tol=1e-12)
