"""``metasched experiment ernemann2002`` end to end on a small slice of the CTC trace."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.experiments.ernemann2002 import default_trace

runner = CliRunner()


@pytest.mark.traces
def test_ernemann2002_writes_csv_figures_and_summary(tmp_path: Path) -> None:
    if not default_trace().exists():
        pytest.skip(f"shared CTC trace not found at {default_trace()} (set METASCHED_SHARED)")
    args = ["experiment", "ernemann2002", "--out", str(tmp_path), "--jobs", "200"]
    args += ["--configs", "m128;m512", "--overheads", "0,25", "--workers", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    with (tmp_path / "results.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    workloads = {r["workload"] for r in rows}
    assert workloads == {"ctc1", "ctc2", "ctc3", "ctcsyn"}
    # per workload: m128 = 3 single + local + 2 sharing + 3 x 2 multi-site; m512 = 3 single
    assert len(rows) == 4 * (3 + 1 + 2 + 6 + 3)
    assert all(float(r["awrt"]) > 0 for r in rows)
    for name in ("fig4_awrt_m128.png", "fig5_configs.png", "fig6_workloads.png", "fig7_wide.png"):
        assert (tmp_path / name).stat().st_size > 1000
    summary = (tmp_path / "summary.md").read_text()
    assert "## Claims per workload" in summary and "## Robustness across the workloads" in summary
    assert "Where we differ" not in summary
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert {(c["id"], c["workload"]) for c in claims} >= {("E1", w) for w in workloads}
    # --replot: the same summary from results.csv alone (no trace read); --study e3 from the rows
    generated = summary.split("## Robustness across the workloads")[1]
    replot = runner.invoke(app, ["experiment", "ernemann2002", "--out", str(tmp_path), "--replot", "--study", "e3"])
    assert replot.exit_code == 0, replot.output
    assert (tmp_path / "summary.md").read_text().split("## Robustness across the workloads")[1] == generated
    assert (tmp_path / "study-e3" / "break_even.csv").read_text().startswith("workload,config,break_even")
    # two traces: four workloads each, labelled by trace
    two = tmp_path / "two"
    both = runner.invoke(app, [*[a if a != str(tmp_path) else str(two) for a in args], "--trace", "CTC", "--trace",
                               str(default_trace()), "--configs", "m128"])  # fmt: skip
    assert both.exit_code == 0, both.output
    with (two / "results.csv").open() as fh:
        names = {r["workload"] for r in csv.DictReader(fh)}
    assert names == {"ctc1", "ctc2", "ctc3", "ctcsyn"} | {f"CTC-SP2-1996-3.1-cln:{k}" for k in ("1", "2", "3", "syn")}


def test_ernemann2002_rejects_bad_options(tmp_path: Path) -> None:
    result = runner.invoke(app, ["experiment", "ernemann2002", "--out", str(tmp_path), "--configs", "m999"])
    assert result.exit_code != 0
    assert "m999" in result.output
    result = runner.invoke(app, ["experiment", "ernemann2002", "--out", str(tmp_path), "--overheads", "a,b"])
    assert result.exit_code != 0
    (tmp_path / "results.csv").write_text("a,b\n1,2\n")
    result = runner.invoke(app, ["experiment", "ernemann2002", "--out", str(tmp_path), "--replot"])
    assert result.exit_code == 2 and "not an ernemann2002 result" in " ".join(result.output.replace("│", " ").split())
    (tmp_path / "results.csv").write_text("a,b\n")
    result = runner.invoke(app, ["experiment", "ernemann2002", "--out", str(tmp_path), "--replot"])
    assert result.exit_code == 2
    missing = tmp_path / "none.swf"
    result = runner.invoke(app, ["experiment", "ernemann2002", "--out", str(tmp_path), "--trace", str(missing)])
    assert result.exit_code == 2
    assert "no file at" in " ".join(result.output.replace("│", " ").split())
