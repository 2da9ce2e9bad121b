"""braun2001 on tiny budgets: deterministic rows, claims with known verdicts, the figure, the command."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.experiments import braun2001 as exp
from metasched.experiments.claims import FAILS, HOLDS, NOT_RUN, evaluate

SHARED = Path(os.environ.get("METASCHED_SHARED", Path(__file__).resolve().parents[2] / ".." / "shared"))
ETC = SHARED / "data" / "etc"
needs_shared = pytest.mark.skipif(not ETC.is_dir(), reason=f"shared data not found at {SHARED}")
TINY = {"ils": 30, "ils+lp": 30, "tabu": 20}


@needs_shared
def test_tiny_run_is_exact_and_deterministic(tmp_path: Path) -> None:
    kw: dict[str, Any] = {"instances": ["u_c_hihi.0"], "mappers": ["min-min", "ils", "ils+lp"], "iterations": TINY}
    res = exp.run(ETC, workers=1, **kw)
    by = {r["mapper"]: r for r in res.rows}
    assert by["min-min"]["makespan"] == 8_460_675.003243  # Braun et al.'s Min-min on this instance
    assert by["ils"]["makespan"] <= by["min-min"]["makespan"]
    assert all(r["over_lp"] >= 1.0 for r in res.rows)
    assert by["min-min"]["gap_pct"] == pytest.approx(100 * (8_460_675.003243 / 7_358_942.8 - 1))
    # an iteration budget, not a clock: the same rows on another run, with other workers
    again = exp.run(ETC, workers=2, **kw)
    assert again.rows == res.rows
    assert {r["mapper"] for r in res.seconds} == {"min-min", "ils", "ils+lp"}
    exp.write_outputs(tmp_path, res, kw["mappers"], command="x", iterations=TINY, seed=0)
    assert "seconds" not in (tmp_path / "braun_makespans.csv").read_text().splitlines()[0]
    assert (tmp_path / "braun_seconds.csv").is_file() and (tmp_path / "braun_makespans.png").is_file()
    with pytest.raises(ValueError, match="unknown mapper"):
        exp.run(ETC, mappers=["nope"])


def _row(instance: str, mapper: str, mk: float, lp: float = 100.0) -> dict[str, Any]:
    return {"instance": instance, "mapper": mapper, "makespan": mk, "lp_bound": lp, "over_lp": mk / lp}


def test_claims_on_hand_made_rows_give_the_known_verdicts() -> None:
    paper = {"olb": 300.0, "met": 400.0, "mct": 150.0, "min-min": 120.0, "max-min": 180.0, "duplex": 120.0,
             "ga": 100.5, "sa": 110.0, "tabu": 105.0}  # fmt: skip
    other = {**paper, "min-min": 160.0, "max-min": 130.0, "ga": 200.0, "sa": 150.0, "tabu": 101.5}
    rows = [_row("P", k, v) for k, v in paper.items()] + [_row("Q", k, v) for k, v in other.items()]
    rows.append(_row("R", "min-min", 120.0))
    got = {(v.claim.id, v.trace): v for v in evaluate(exp.CLAIMS, rows, ["P", "Q", "R"])}
    for cid in ("B1", "B2", "B3", "B4", "B5", "K1"):
        assert got[(cid, "P")].verdict == HOLDS, cid
        assert got[(cid, "Q")].verdict == FAILS, cid
    assert got[("K1", "P")].measure.value == pytest.approx(0.5)  # type: ignore[union-attr]
    assert got[("K1", "Q")].measure.value == pytest.approx(1.5)  # type: ignore[union-attr]
    assert got[("B1", "R")].verdict == NOT_RUN and got[("K1", "R")].verdict == FAILS  # 20% above LP
    text = exp.summary_markdown(exp.BraunResult(rows, []), list(paper), command="x", iterations={}, seed=0)
    assert "6 verdicts hold, 7 do not, 5 were not run (6 claims x 3 instance(s))" in text


def test_every_mapper_line_has_its_own_colour_and_marker_and_the_legend_is_outside() -> None:
    keys = exp.known_keys()
    rows = [_row(f"i{j}", k, 100.0 + i + j) for j in range(3) for i, k in enumerate(keys)]
    fig = exp.figure(rows, keys)
    fig.canvas.draw()
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert len(lines) == len(keys)
    assert len({str(ln.get_color()) for ln in lines}) == len(keys)
    assert len({ln.get_marker() for ln in lines}) == len(keys)
    assert not fig.legends[0].get_window_extent().overlaps(ax.get_window_extent())


@needs_shared
def test_cli_resume_replot_and_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["experiment", "braun2001", "--out", str(tmp_path), "--shared", str(SHARED), "--workers", "1",
            "--instances", "u_i_lolo.0", "--mappers", "met,mct,ils", "--iterations", "ils=5"]  # fmt: skip
    first = runner.invoke(app, base)
    assert first.exit_code == 0, first.output
    csv_bytes = (tmp_path / "braun_makespans.csv").read_bytes()
    again = runner.invoke(app, [*base, "--resume"])
    assert again.exit_code == 0 and "resuming: 3 mappings" in again.output
    assert (tmp_path / "braun_makespans.csv").read_bytes() == csv_bytes
    (tmp_path / "summary.md").unlink()
    replot = runner.invoke(app, [*base, "--replot"])
    assert replot.exit_code == 0, replot.output
    assert "u_i_lolo.0" in (tmp_path / "summary.md").read_text()
    for extra, message in (
        (["--iterations", "ils=-1"], "N must be >= 0"),
        (["--iterations", "nope=3"], "expected KEY=N"),
        (["--budget", "5"], "no longer seconds"),
        (["--mappers", "nope"], "unknown mapper"),
        (["--instances", "u_x.0"], "not found"),
    ):
        out = runner.invoke(app, [*base, *extra])
        assert out.exit_code == 2 and message in out.output, (extra, out.output)
    helptext = runner.invoke(app, ["experiment", "--help"]).output
    assert "smartnet1998" in helptext and "braun2001" in helptext
