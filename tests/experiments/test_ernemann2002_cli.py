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
    assert "## Claims" in summary and "## Where we differ and why" in summary
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert any(c["claim"].startswith("Job sharing cuts AWRT") for c in claims)


def test_ernemann2002_rejects_bad_options(tmp_path: Path) -> None:
    result = runner.invoke(app, ["experiment", "ernemann2002", "--out", str(tmp_path), "--configs", "m999"])
    assert result.exit_code != 0
    assert "m999" in result.output
    result = runner.invoke(app, ["experiment", "ernemann2002", "--out", str(tmp_path), "--overheads", "a,b"])
    assert result.exit_code != 0
    missing = tmp_path / "none.swf"
    result = runner.invoke(app, ["experiment", "ernemann2002", "--out", str(tmp_path), "--trace", str(missing)])
    assert result.exit_code == 2
    assert "not found" in result.output
