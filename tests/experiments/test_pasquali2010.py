"""pasquali2010 through the one runner: resuming keeps the runs done and gives the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.experiments.pasquali2010 import Pasquali2010Config, run
from metasched.workload.pasquali import PasqualiParams

SMALL = PasqualiParams(n_jobs=60, cluster_sizes=(8, 4, 2, 1))


def test_resume_runs_only_what_is_missing_and_gives_the_same_rows(tmp_path: Path) -> None:
    cfg = Pasquali2010Config(tas=(0.0, 5.0), cases=("ms", "none"), repetitions=2, workers=1, params=SMALL)
    records: list[dict[str, Any]] = []
    rows, _ = run(cfg, tmp_path / "a", on_record=records.append)
    assert len(records) == 8
    again: list[dict[str, Any]] = []
    ticks: list[int] = []
    pooled = Pasquali2010Config(tas=(0.0, 5.0), cases=("ms", "none"), repetitions=2, workers=2, params=SMALL)
    rows2, _ = run(pooled, tmp_path / "b", done=records[:3], on_record=again.append, progress=ticks.append)
    assert len(again) == 5 and sum(ticks) == 8
    assert rows2 == rows
    assert (tmp_path / "a" / "clusters.csv").read_bytes() == (tmp_path / "b" / "clusters.csv").read_bytes()


def test_cli_resume_and_other_inputs(tmp_path: Path) -> None:
    args = ["experiment", "pasquali2010", "--out", str(tmp_path), "--repetitions", "1", "--jobs", "40"]
    args += ["--ta", "0", "--ta", "5", "--case", "ms", "--workers", "1"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    clusters = (tmp_path / "clusters.csv").read_bytes()
    assert len((tmp_path / "runs.partial.jsonl").read_text().splitlines()) == 2
    resumed = CliRunner().invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert "resuming: 2 runs" in resumed.output and (tmp_path / "clusters.csv").read_bytes() == clusters
    other = CliRunner().invoke(app, [*[a if a != "40" else "30" for a in args], "--resume"])
    assert other.exit_code == 2 and "other inputs" in other.output
