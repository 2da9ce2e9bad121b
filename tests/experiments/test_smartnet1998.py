"""smartnet1998 on tiny sizes: the sweep, resuming, the readings as parameters, claims with known
verdicts, figures and CSVs (the full runs are in docs/smartnet1998.md)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.experiments import smartnet1998 as exp
from metasched.experiments.claims import FAILS, HOLDS, NOT_RUN, evaluate
from metasched.workload.etc import NasTable, smartnet_academic

SHARED = Path(os.environ.get("METASCHED_SHARED", Path(__file__).resolve().parents[2] / ".." / "shared"))
NAS = SHARED / "data" / "nas" / "smartnet_etc.csv"
needs_shared = pytest.mark.skipif(not NAS.is_file(), reason=f"shared data not found at {SHARED}")
SETUP = exp.Setup()


@needs_shared
def test_tiny_sweep_rows_and_invariants(tmp_path: Path) -> None:
    table = NasTable.read(NAS)
    res = exp.run(table, [SETUP], problems=6, noise_problems=2, sigmas=(0.0, 0.3), workers=1)
    assert len(res.ratios) == 12
    for r in res.ratios:
        assert r["smartnet"] == r[exp.SMARTNET_MAPPER[r["model"]]]
        assert r["lb_ratio"] == r["olb"] / r["smartnet"]
        assert r["smartnet"] >= r["lower_bound"] * (1 - 1e-9)
    tab = exp.noise_table(res.noise)
    # With no noise the dynamic load balancer is OLB on the estimates (problems 0 and 1).
    for model in exp.MODELS:
        olb0 = np.mean([r["olb"] for r in res.ratios if r["model"] == model][:2])
        assert tab[(model, "dynamic-olb", 0.0)] == pytest.approx(olb0, rel=1e-12)
    # Same rows whatever the number of workers (the local pool forks).
    again = exp.run(table, [SETUP], problems=6, noise_problems=2, sigmas=(0.0, 0.3), workers=2)
    assert again.ratios == res.ratios and again.noise == res.noise
    exp.write_outputs(tmp_path, res, [SETUP], command="test", problems=6, noise_problems=2, seed=0)
    for f in ("smartnet_ratios.csv", "smartnet_noise.csv", "smartnet_ratios.png", "smartnet_noise.png", "summary.md"):
        assert (tmp_path / f).is_file(), f


@needs_shared
def test_resume_runs_only_the_missing_chunks_and_gives_the_same_rows() -> None:
    table = NasTable.read(NAS)
    seen: list[dict[str, Any]] = []
    full = exp.run(table, [SETUP], problems=60, noise_problems=0, workers=1, on_done=seen.append)
    assert len(seen) == 6  # 3 chunks of 25 problems per model
    json_rows = json.loads(json.dumps(seen[::2]))  # as a journal gives them back
    ran: list[dict[str, Any]] = []
    resumed = exp.run(table, [SETUP], problems=60, noise_problems=0, workers=1, done=json_rows, on_done=ran.append)
    assert resumed.ratios == full.ratios and len(ran) == 3


def test_academic_divide_is_the_workload_model_and_multiply_uses_the_same_draws() -> None:
    a = exp.academic_instance(np.random.default_rng(7), SETUP).etc
    b = smartnet_academic(np.random.default_rng(7), 100, 20).etc
    assert np.array_equal(a, b)
    c = exp.academic_instance(np.random.default_rng(7), exp.Setup(speed="multiply")).etc
    # t / s and t x s from the same t and s: their product is t^2, the same in every column of a row
    prod = a * c
    assert np.allclose(prod, prod[:, :1])


@needs_shared
def test_random_ties_only_shuffle_the_machines() -> None:
    table = NasTable.read(NAS)
    for model in exp.MODELS:
        low = exp.instance(model, SETUP, 3, 5, table)
        rnd = exp.instance(model, exp.Setup(tie="random"), 3, 5, table)
        assert not np.array_equal(low.etc, rnd.etc)
        assert np.array_equal(np.sort(low.etc, axis=1), np.sort(rnd.etc, axis=1))
        assert sorted(map(tuple, low.etc.T.tolist())) == sorted(map(tuple, rnd.etc.T.tolist()))


def test_setup_refuses_unknown_readings() -> None:
    with pytest.raises(ValueError, match="speed 'fast'"):
        exp.Setup(speed="fast")
    with pytest.raises(ValueError, match="tie 'first'"):
        exp.Setup(tie="first")
    with pytest.raises(ValueError, match="positive"):
        exp.Setup(tasks=0)


# ----------------------------------------------------------------------------- claims, hand-made


def _ratio(setup: str, model: str, olb: float, met: float, mn: float, mx: float) -> dict[str, Any]:
    sn = mx if model == "production" else mn
    return {"setup": setup, "model": model, "olb": olb, "met": met, "min-min": mn, "max-min": mx,
            "smartnet": sn, "lb_ratio": olb / sn, "uda_ratio": met / sn}  # fmt: skip


def _noise(setup: str, model: str, sigma: float, mapper: str, mk: float) -> dict[str, Any]:
    return {"setup": setup, "model": model, "sigma": sigma, "problem": 0, "mapper": mapper, "makespan": mk}


def test_claims_on_hand_made_rows_give_the_known_verdicts() -> None:
    # Setup A reproduces the paper; setup B contradicts every claim; setup C has no noise rows.
    rows = [
        _ratio("A", "production", 360.0, 20.0, 11.0, 10.0),  # F1 36, F2 2
        _ratio("A", "academic", 22.0, 28.0, 10.0, 12.0),  # F4 2.2, F5 2.8, F3 +20%
        _ratio("B", "production", 35.0, 40.0, 11.0, 10.0),  # F1 3.5, F2 4
        _ratio("B", "academic", 10.0, 10.0, 10.0, 8.0),  # F4 1, F5 1, F3 -20%
        _ratio("C", "production", 360.0, 20.0, 11.0, 10.0),
        _noise("A", "production", 0.0, "max-min", 10.0),
        _noise("A", "production", 0.5, "max-min", 11.0),  # SmartNet +10%
        _noise("A", "production", 0.0, "dynamic-olb", 20.0),
        _noise("A", "production", 0.5, "dynamic-olb", 24.0),  # LB +20%: F6 holds, F7 +118%, F8 -10 points
        _noise("B", "production", 0.0, "max-min", 10.0),
        _noise("B", "production", 0.5, "max-min", 20.0),  # SmartNet +100%
        _noise("B", "production", 0.0, "dynamic-olb", 20.0),
        _noise("B", "production", 0.5, "dynamic-olb", 18.0),  # LB -10%: F6 fails, F7 -10%, F8 +110 points
    ]
    got = {(v.claim.id, v.trace): v for v in evaluate(exp.CLAIMS, rows, ["A", "B", "C"])}
    for cid in ("F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8"):
        assert got[(cid, "A")].verdict == HOLDS, cid
        assert got[(cid, "B")].verdict == FAILS, cid
    assert got[("F1", "A")].measure.value == pytest.approx(36.0)  # type: ignore[union-attr]
    assert got[("F3", "B")].measure.value == pytest.approx(-20.0)  # type: ignore[union-attr]
    assert got[("F8", "A")].measure.value == pytest.approx(-10.0)  # type: ignore[union-attr]
    assert got[("F1", "C")].verdict == HOLDS
    assert got[("F4", "C")].verdict == NOT_RUN and got[("F6", "C")].verdict == NOT_RUN
    res = exp.SmartnetResult([r for r in rows if "sigma" not in r], [r for r in rows if "sigma" in r])
    setups = [exp.Setup(), exp.Setup(tie="random")]
    relabel = {"A": setups[0].label, "B": setups[1].label}
    for r in [*res.ratios, *res.noise]:
        r["setup"] = relabel.get(r["setup"], r["setup"])
    text = exp.summary_markdown(res, setups, command="x", problems=1, noise_problems=1, seed=0)
    assert "8 verdicts hold, 8 do not, 0 were not run" in text
    assert "## Robustness across the setups" in text


# ----------------------------------------------------------------------------- figures and CSVs


def test_every_noise_line_has_its_own_colour_and_marker_and_the_legend_is_outside() -> None:
    keys = exp.noise_keys([{"mapper": k} for k in [*exp.REGISTRY, "dynamic-olb"]])
    styles = [exp.line_style(i) for i in range(len(keys))]
    assert len({s["color"] for s in styles}) == len(keys) and len({s["marker"] for s in styles}) == len(keys)
    noise = [_noise("A", m, s, k, 10.0 + i + s) for m in exp.MODELS for s in (0.0, 0.5) for i, k in enumerate(keys)]
    fig = exp.noise_figure(noise)
    fig.canvas.draw()
    legend = fig.legends[0].get_window_extent()
    for ax in fig.axes:
        assert not legend.overlaps(ax.get_window_extent())
        lines = ax.get_lines()
        assert len({str(ln.get_color()) for ln in lines}) == len(lines) == len(keys)
        assert len({ln.get_marker() for ln in lines}) == len(lines)


def test_csvs_keep_full_precision(tmp_path: Path) -> None:
    value = 8460675.123456789
    exp.write_csv(tmp_path / "m.csv", [{"makespan": value, "third": 1 / 3}])
    row = next(csv.DictReader((tmp_path / "m.csv").open()))
    assert float(row["makespan"]) == value and float(row["third"]) == 1 / 3  # (".6g" gave 8.46068e+06)


# ----------------------------------------------------------------------------- the command


@needs_shared
def test_cli_resume_replot_study_and_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["experiment", "smartnet1998", "--out", str(tmp_path), "--shared", str(SHARED), "--workers", "1"]
    first = runner.invoke(app, [*base, "--problems", "4", "--noise-problems", "0"])
    assert first.exit_code == 0, first.output
    ratios = (tmp_path / "smartnet_ratios.csv").read_bytes()
    again = runner.invoke(app, [*base, "--problems", "4", "--noise-problems", "0", "--resume"])
    assert again.exit_code == 0 and "resuming: 2 chunks" in again.output
    assert (tmp_path / "smartnet_ratios.csv").read_bytes() == ratios
    other = runner.invoke(app, [*base, "--problems", "5", "--noise-problems", "0", "--resume"])
    assert other.exit_code == 2 and "written for other inputs" in other.output
    (tmp_path / "summary.md").unlink()
    replot = runner.invoke(app, [*base, "--replot"])
    assert replot.exit_code == 0, replot.output
    assert "which claims hold" in (tmp_path / "summary.md").read_text()
    study = runner.invoke(app, [*base, "--out", str(tmp_path / "s"), "--problems", "3", "--study", "ties"])
    assert study.exit_code == 0, study.output
    assert (tmp_path / "s" / "study_ties.png").is_file()
    text = (tmp_path / "s" / "summary.md").read_text()
    assert "## Robustness across the setups" in text and exp.Setup(tie="random").label in text
    bad = runner.invoke(app, [*base, "--study", "nope"])
    assert bad.exit_code == 2 and "unknown study 'nope'" in bad.output
    bad = runner.invoke(app, [*base, "--speed", "fast"])
    assert bad.exit_code == 2 and "speed 'fast'" in bad.output


@needs_shared
def test_per_task_ties_spread_the_user_directed_tasks_over_equally_fast_machines() -> None:
    table = NasTable.read(NAS)
    low = exp.ratio_rows("production", SETUP, 0, range(20), table)
    per = exp.ratio_rows("production", exp.Setup(tie="per-task"), 0, range(20), table)
    # the same problems and the same other mappers; MET can only gain from spreading equal choices
    assert [r["olb"] for r in per] == [r["olb"] for r in low]
    assert all(p["met"] <= q["met"] for p, q in zip(per, low, strict=True))
    assert any(p["met"] < q["met"] for p, q in zip(per, low, strict=True))
