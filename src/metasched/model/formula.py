"""User-given run-time formulas: small arithmetic expressions of a job's parameters, evaluated safely.

Source: seed 002, section 2.2 (SmartNet): the user may give, per task kind, a formula of the task's
input parameters for its run time ("the time complexity"); here it gives the estimate in seconds
directly, e.g. ``"0.002 * n**2 + 5"`` with ``n`` a parameter the job carries.

Why a hand-written evaluator: the expression comes from a config file or the command line, so it
must not run arbitrary code. ``eval`` (even with empty builtins) can be escaped through attribute
access on literals; ``numexpr`` has itself evaluated strings with ``eval`` in past releases, and
``simpleeval`` would be a dependency for what is ~80 lines here. The expression is parsed with
:mod:`ast` and only these nodes are accepted: numbers, parameter names, ``+ - * / // % **``, unary
``+ -``, and calls of ``min max abs sqrt log log2 log10 exp ceil floor``. Anything else (attribute,
subscript, string, comparison, lambda, other names called...) is refused at parse time, naming it.
Exponents are capped (``|exponent| <= 16``) and every result must be a finite number.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "sqrt": math.sqrt,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "exp": math.exp,
    "ceil": math.ceil,
    "floor": math.floor,
}
MAX_EXPONENT = 16.0
MAX_LENGTH = 500


class FormulaError(ValueError):
    """A formula that cannot be parsed, or cannot be evaluated for the given parameters."""


@dataclass(frozen=True)
class ExpressionFormula:
    """A run-time formula (seconds) of named parameters; callable as ``formula(params)``.

    Invariant: parsing accepts only the nodes listed in the module docstring, so evaluation only
    does arithmetic on floats; a result that is not a finite number raises :class:`FormulaError`.
    """

    text: str
    names: frozenset[str] = field(init=False)
    _tree: ast.expr = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.text) > MAX_LENGTH:
            raise FormulaError(f"formula longer than {MAX_LENGTH} characters")
        try:
            tree = ast.parse(self.text.strip(), mode="eval").body
        except SyntaxError as exc:
            raise FormulaError(f"formula {self.text!r}: not an arithmetic expression ({exc.msg})") from None
        names: set[str] = set()
        _check(tree, self.text, names)
        object.__setattr__(self, "_tree", tree)
        object.__setattr__(self, "names", frozenset(names))

    def __call__(self, params: Mapping[str, float]) -> float:
        missing = sorted(self.names - set(params))
        if missing:
            raise FormulaError(f"formula {self.text!r} needs parameter(s) {', '.join(missing)}")
        try:
            value = float(_eval(self._tree, params))
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise FormulaError(f"formula {self.text!r} with {dict(params)}: {exc}") from None
        if not math.isfinite(value):
            raise FormulaError(f"formula {self.text!r} with {dict(params)} gave {value}")
        return value


def _check(node: ast.AST, text: str, names: set[str]) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise FormulaError(f"formula {text!r}: only numbers are allowed as constants, not {node.value!r}")
    elif isinstance(node, ast.Name):
        if node.id in _FUNCTIONS:
            raise FormulaError(f"formula {text!r}: {node.id} is a function, call it: {node.id}(...)")
        names.add(node.id)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, text, names)
        _check(node.right, text, names)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, text, names)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            allowed = ", ".join(sorted(_FUNCTIONS))
            raise FormulaError(f"formula {text!r}: only these functions may be called: {allowed}")
        if node.keywords or not node.args:
            raise FormulaError(f"formula {text!r}: {node.func.id}() takes positional arguments only")
        for arg in node.args:
            _check(arg, text, names)
    else:
        raise FormulaError(f"formula {text!r}: {type(node).__name__} is not allowed (arithmetic only)")


def _eval(node: ast.expr, params: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, int | float)  # _check accepted numbers only
        return float(node.value)
    if isinstance(node, ast.Name):
        return float(params[node.id])
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, params), _eval(node.right, params)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponent {right} larger than {MAX_EXPONENT}")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, params))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return float(_FUNCTIONS[node.func.id](*(_eval(a, params) for a in node.args)))
