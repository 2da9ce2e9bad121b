"""A paper's claims as data, and the summary tables generated from them and a run's numbers.

A :class:`Claim` names what the paper says (``statement``), the paper's own value (``paper``, as
the paper gives it), how our value is computed from the sweep's rows on one trace (``measure``)
and the ``tolerance``: the interval our value must fall in for the claim to hold. The interval is
this reproduction's reading of the paper's words ("slightly", "much better"), fixed in code
before any run, and printed with every verdict.

Invariant: a verdict is a function of the rows only. ``holds`` iff the measured value lies in the
closed interval; ``does not hold`` otherwise; ``not run`` when the rows lack what the measure
needs. Every sentence the summary makes about results is one of these tables: no prose.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Rows = Sequence[Mapping[str, Any]]

HOLDS = "holds"
FAILS = "does not hold"
NOT_RUN = "not run"


@dataclass(frozen=True)
class Measure:
    """Our value of a claim on one trace, and the numbers behind it (``detail``)."""

    value: float
    detail: str = ""


@dataclass(frozen=True)
class Interval:
    """A closed interval ``[lo, hi]`` (``±inf`` for an open side) with the unit of its bounds."""

    lo: float = -math.inf
    hi: float = math.inf
    unit: str = "%"

    def __contains__(self, x: float) -> bool:
        return self.lo <= x <= self.hi

    def __str__(self) -> str:
        def num(x: float) -> str:
            return f"{x:+g}%" if self.unit == "%" else f"{x:g}"

        u = "" if self.unit == "%" else f" {self.unit}"
        if self.lo == -math.inf and self.hi == math.inf:
            return "any"
        if self.lo == -math.inf:
            return f"≤ {num(self.hi)}{u}"
        if self.hi == math.inf:
            return f"≥ {num(self.lo)}{u}"
        if self.lo == self.hi:
            return f"{num(self.lo)}{u}"
        return f"{num(self.lo)} to {num(self.hi)}{u}"


@dataclass(frozen=True)
class Claim:
    """One claim of a paper (see the module docstring)."""

    id: str
    statement: str
    paper: str
    measure: Callable[[Rows, str], Measure | None]
    tolerance: Interval
    figure: str = ""


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    trace: str
    measure: Measure | None

    @property
    def verdict(self) -> str:
        if self.measure is None or not math.isfinite(self.measure.value):
            return NOT_RUN
        return HOLDS if self.measure.value in self.claim.tolerance else FAILS

    @property
    def ours(self) -> str:
        if self.measure is None:
            return "-"
        unit = "%" if self.claim.tolerance.unit == "%" else f" {self.claim.tolerance.unit}"
        head = (
            f"{self.measure.value:+.1f}{unit}" if self.claim.tolerance.unit == "%" else f"{self.measure.value:g}{unit}"
        )
        return f"{head} ({self.measure.detail})" if self.measure.detail else head


def evaluate(claims: Sequence[Claim], rows: Rows, traces: Sequence[str]) -> list[Verdict]:
    """Every claim on every trace, in claim order then trace order."""
    return [Verdict(c, t, c.measure(rows, t)) for c in claims for t in traces]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def claims_tables(verdicts: Sequence[Verdict], traces: Sequence[str]) -> list[str]:
    """Markdown: per trace, a table claim / paper / ours / tolerance / verdict (claims not run on
    any trace are left out)."""
    ran = {v.claim.id for v in verdicts if v.verdict != NOT_RUN}
    lines: list[str] = []
    for trace in traces:
        lines += [
            f"### {trace}",
            "",
            "| id | claim | paper | ours | holds if ours is | verdict |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for v in verdicts:
            if v.trace == trace and v.claim.id in ran:
                c = v.claim
                lines.append(
                    f"| {c.id} | {_cell(c.statement)} | {_cell(c.paper)} | {_cell(v.ours)} | {c.tolerance} "
                    f"| {'**' + v.verdict + '**' if v.verdict == FAILS else v.verdict} |"
                )
        lines.append("")
    return lines


def robustness_table(verdicts: Sequence[Verdict], traces: Sequence[str]) -> list[str]:
    """Markdown: one row per claim, its verdict on every trace and on how many it holds."""
    lines = [
        "| id | claim | " + " | ".join(traces) + " | holds on |",
        "| --- | --- | " + " | ".join("---" for _ in traces) + " | --- |",
    ]
    by_claim: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_claim.setdefault(v.claim.id, []).append(v)
    for vs in by_claim.values():
        run = [v for v in vs if v.verdict != NOT_RUN]
        if not run:
            continue
        cells = {v.trace: v for v in vs}
        row = [
            f"{cells[t].verdict} ({cells[t].measure.value:+.1f})"  # type: ignore[union-attr]
            if t in cells and cells[t].verdict != NOT_RUN and cells[t].claim.tolerance.unit == "%"
            else (cells[t].verdict if t in cells else NOT_RUN)
            for t in traces
        ]
        held = sum(v.verdict == HOLDS for v in run)
        lines.append(
            f"| {vs[0].claim.id} | {_cell(vs[0].claim.statement)} | " + " | ".join(row) + f" | {held} of {len(run)} |"
        )
    return lines


def counts(verdicts: Sequence[Verdict]) -> dict[str, int]:
    """How many verdicts of each kind (for the summary's first line)."""
    out = {HOLDS: 0, FAILS: 0, NOT_RUN: 0}
    for v in verdicts:
        out[v.verdict] += 1
    return out


# ----------------------------------------------------------------------------- measure helpers


def series(rows: Rows, trace: str, scheme: str, metric: str, x: str = "load_factor") -> list[float] | None:
    """``metric`` of ``scheme`` on ``trace`` in ``x`` order; None when not run (or not measured)."""
    mine = [r for r in rows if r["trace"] == trace and r["scheme"] == scheme]
    if any(metric not in r for r in mine):
        return None
    pts = sorted((float(r[x]), float(r[metric])) for r in mine)
    return [p[1] for p in pts] if pts else None


def mean_rel(a: Sequence[float], b: Sequence[float]) -> float:
    """Mean over points of ``(a - b) / b``, in percent."""
    return 100.0 * sum((x - y) / y for x, y in zip(a, b, strict=True)) / len(a)


def relative(a: str, b: str, metric: str, what: str) -> Callable[[Rows, str], Measure | None]:
    """Our value: the mean relative change of scheme ``a`` over scheme ``b`` in ``metric``
    across the load factors run (percent)."""

    def measure(rows: Rows, trace: str) -> Measure | None:
        x, y = series(rows, trace, a, metric), series(rows, trace, b, metric)
        if x is None or y is None or len(x) != len(y):
            return None
        return Measure(mean_rel(x, y), f"{what}, mean over {len(x)} load factors")

    return measure
