"""Claims as data: a hand-made result set where each verdict is known, and the generated tables."""

from __future__ import annotations

import math
from typing import Any

from metasched.experiments import claims as cl
from metasched.experiments import sabin2003 as exp


def _rows(trace: str, values: dict[str, list[float]], metric: str = "mean_turnaround") -> list[dict[str, Any]]:
    loads = (1.0, 2.0)
    return [
        {"trace": trace, "load_factor": f, "scheme": s, metric: v, "jobs": 40}
        for s, vs in values.items()
        for f, v in zip(loads, vs, strict=True)
    ]


def test_interval_bounds_are_closed_and_print_their_reading() -> None:
    i = cl.Interval(-15, 0)
    assert -15 in i and 0 in i and -15.0001 not in i and 0.0001 not in i
    assert str(i) == "-15% to +0%" and str(cl.Interval(hi=-20)) == "≤ -20%" and str(cl.Interval(lo=0)) == "≥ +0%"
    assert 6 in cl.Interval(6, 6, "of 6 pairs") and 5 not in cl.Interval(6, 6, "of 6 pairs")


def test_hand_made_results_give_the_known_verdicts() -> None:
    # S1 (MR vs greedy within -15..0%): trace A -10% (holds), B -30% (does not), C +5% (does not)
    # S3 (conservative >= 20% lower than aggressive): A -50% (holds), B -20% exactly (holds: closed bound)
    rows = [
        *_rows("A", {"greedy": [100.0, 200.0], "mr-easy": [90.0, 180.0], "cons-fcfs": [45.0, 90.0]}),
        *_rows("B", {"greedy": [100.0, 100.0], "mr-easy": [70.0, 70.0], "cons-fcfs": [56.0, 56.0]}),
        *_rows("C", {"greedy": [100.0, 100.0], "mr-easy": [105.0, 105.0]}),
    ]
    verdicts = {(v.claim.id, v.trace): v for v in cl.evaluate(exp.CLAIMS, rows, ["A", "B", "C"])}
    assert verdicts["S1", "A"].verdict == cl.HOLDS and math.isclose(verdicts["S1", "A"].measure.value, -10.0)  # type: ignore[union-attr]
    assert verdicts["S1", "B"].verdict == cl.FAILS
    assert verdicts["S1", "C"].verdict == cl.FAILS and math.isclose(verdicts["S1", "C"].measure.value, 5.0)  # type: ignore[union-attr]
    assert verdicts["S3", "A"].verdict == cl.HOLDS
    assert verdicts["S3", "B"].verdict == cl.HOLDS and math.isclose(verdicts["S3", "B"].measure.value, -20.0)  # type: ignore[union-attr]
    assert verdicts["S3", "C"].verdict == cl.NOT_RUN  # no conservative run on C
    assert verdicts["S2", "A"].verdict == cl.NOT_RUN  # no utilization column
    assert cl.counts(list(verdicts.values())) == {cl.HOLDS: 3, cl.FAILS: 2, cl.NOT_RUN: len(verdicts) - 5}


def test_k_gain_messages_and_ordering_claims() -> None:
    # S12: K=1..4 turnaround 100, 60, 50, 45: gains 40, 10, 5 -> 40 - 10 = 30 s (holds)
    rows = _rows("A", {f"eff-load-k{k}": [v, v] for k, v in zip((1, 2, 3, 4), (100, 60, 50, 45), strict=True)})
    # S12 on B: gains 10, 20, 5 -> the first step is not the largest (does not hold)
    rows += _rows("B", {f"eff-load-k{k}": [v, v] for k, v in zip((1, 2, 3, 4), (100, 90, 70, 65), strict=True)})
    rows += _rows("A", {f"xfer-k{k}": [v, v] for k, v in zip((1, 2, 3, 4), (1.0, 2.0, 3.5, 3.5), strict=True)},
                  metric="messages_per_job")  # fmt: skip
    verdicts = {(v.claim.id, v.trace): v for v in cl.evaluate(exp.CLAIMS, rows, ["A", "B"])}
    assert verdicts["S12", "A"].verdict == cl.HOLDS and verdicts["S12", "A"].measure.value == 30  # type: ignore[union-attr]
    assert verdicts["S12", "B"].verdict == cl.FAILS
    # messages 1, 2, 3.5, 3.5: the last step does not grow
    assert verdicts["S16", "A"].verdict == cl.FAILS and verdicts["S16", "A"].measure.value == 0  # type: ignore[union-attr]


def test_summary_is_generated_from_the_rows_only() -> None:
    rows = [
        *_rows("A", {"greedy": [100.0, 200.0], "mr-easy": [90.0, 180.0]}),
        *_rows("B", {"greedy": [100.0, 100.0], "mr-easy": [70.0, 70.0]}),
    ]
    md = exp.summary_markdown(rows, ["A", "B"], "cmd", ["a note"], {"A": ("a.swf (Computer: X)", 338)})
    assert "| A | a.swf (Computer: X) | 338 | 40 |" in md and "| B | - | - | 40 |" in md
    assert (
        "| S1 | Greedy-MR (K=4) lowers turnaround only slightly vs greedy (within 15%) | a slight gain | -10.0%" in md
    )
    assert (
        "| S1 | Greedy-MR (K=4) lowers turnaround only slightly vs greedy (within 15%) | holds (-10.0) | **" not in md
    )
    assert "holds (-10.0) | does not hold (-30.0) | 1 of 2 |" in md
    assert "S3" not in md  # claims without runs on any trace are left out
    assert "338 processors" not in md and "430" not in md.split("## Setup")[0]
    assert "1 verdicts hold, 1 do not" in md
    # another run, other numbers: other sentences (nothing about the results is fixed text)
    other = exp.summary_markdown(
        [{**r, "mean_turnaround": r["mean_turnaround"] * (1.6 if r["scheme"] == "mr-easy" else 1)} for r in rows],
        ["A", "B"],
        "cmd",
        [],
    )
    assert "0 verdicts hold, 2 do not" in other


def test_no_two_lines_of_a_sabin_figure_share_a_colour_or_a_marker() -> None:
    for fig in exp.FIGURES.values():
        styles = [exp.line_style(k) for k in fig.series]
        assert len({s["color"] for s in styles}) == len(styles), fig.number
        assert len({s["marker"] for s in styles}) == len(styles), fig.number
