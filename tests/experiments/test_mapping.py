"""The mapping experiments, on tiny sizes (the full runs are in BENCHMARKS.md)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.experiments.mapping import braun2001, noise_table, smartnet1998
from metasched.workload.etc import NasTable

SHARED = Path(os.environ.get("METASCHED_SHARED", Path(__file__).resolve().parents[2] / ".." / "shared"))
NAS = SHARED / "data" / "nas" / "smartnet_etc.csv"
ETC = SHARED / "data" / "etc"
needs_shared = pytest.mark.skipif(not (NAS.is_file() and ETC.is_dir()), reason=f"shared data not found at {SHARED}")


@pytest.mark.slow
@needs_shared
def test_smartnet1998_tiny(tmp_path: Path) -> None:
    res = smartnet1998(NasTable.read(NAS), tmp_path, problems=6, noise_problems=2, sigmas=(0.0, 0.3), workers=1)
    for f in ("smartnet_ratios.csv", "smartnet_noise.csv", "smartnet_ratios.png", "smartnet_noise.png", "summary.md"):
        assert (tmp_path / f).is_file(), f
    rows = list(csv.DictReader((tmp_path / "smartnet_ratios.csv").open()))
    assert len(rows) == 12
    for r in rows:
        sn = float(r["max-min" if r["model"] == "production" else "min-min"])
        assert float(r["smartnet"]) == pytest.approx(sn, rel=1e-5)
        assert float(r["lb_ratio"]) == pytest.approx(float(r["olb"]) / sn, rel=1e-4)
        assert float(r["smartnet"]) >= float(r["lower_bound"]) * (1 - 1e-6)
        if r["model"] == "academic":  # continuous speeds: no equally fast machines, random ties change nothing
            assert float(r["met-random-ties"]) == pytest.approx(float(r["met"]), rel=1e-6)
    tab = noise_table(res.noise)
    # With no noise the dynamic load balancer is OLB on the estimates.
    for model in ("production", "academic"):
        olb0 = np.mean([float(r["olb"]) for r in rows if r["model"] == model][:2])
        assert tab[(model, "dynamic-olb", 0.0)] == pytest.approx(olb0, rel=1e-5)
    # Same seed, same numbers, whatever the number of workers.
    again = smartnet1998(NasTable.read(NAS), tmp_path / "b", problems=6, noise_problems=0, workers=2)
    assert [r["smartnet"] for r in again.ratios] == [r["smartnet"] for r in res.ratios]


@needs_shared
def test_braun2001_tiny(tmp_path: Path) -> None:
    rows = braun2001(ETC, tmp_path, budget_s=0.05, instances=["u_c_hihi.0"], mappers=["min-min", "ils"], workers=1)
    by = {r["mapper"]: r for r in rows}
    assert by["min-min"]["makespan"] == pytest.approx(8_460_675.0, abs=0.01)
    assert by["ils"]["makespan"] <= by["min-min"]["makespan"]
    assert all(r["over_lp"] >= 1.0 for r in rows)
    assert (tmp_path / "summary.md").read_text().count("u_c_hihi.0") >= 3
    with pytest.raises(ValueError, match="unknown mapper"):
        braun2001(ETC, tmp_path, mappers=["nope"])


@needs_shared
def test_cli_registers_both_experiments(tmp_path: Path) -> None:
    out = CliRunner().invoke(
        app,
        [
            "experiment",
            "braun2001",
            "--out",
            str(tmp_path),
            "--budget",
            "0.01",
            "--instances",
            "u_i_lolo.0",
            "--mappers",
            "met,mct",
            "--workers",
            "1",
            "--shared",
            str(SHARED),
        ],
    )
    assert out.exit_code == 0, out.output
    assert (tmp_path / "braun_makespans.csv").is_file()
    helptext = CliRunner().invoke(app, ["experiment", "--help"]).output
    assert "smartnet1998" in helptext and "braun2001" in helptext
