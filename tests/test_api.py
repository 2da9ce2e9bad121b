"""The notebook API: the documented example runs, and ``import metasched`` stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import metasched

REPO = Path(__file__).resolve().parents[1]


def test_import_metasched_loads_no_simulator() -> None:
    code = "import sys, metasched; print(any(m.startswith(('metasched.sim', 'numpy')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_simulate_from_python(tmp_path: Path) -> None:
    (tmp_path / "sites.toml").write_text("[sites.a]\nprocs = 4\n[sites.b]\nprocs = 4\nspeed = 2.0\n")
    plat = metasched.Platform.from_toml(tmp_path / "sites.toml")
    jobs = [metasched.Job(i, float(i), 10.0, 20.0, 2) for i in range(1, 9)]
    result = metasched.simulate(jobs, plat, "least-load")
    assert isinstance(result, metasched.Result)
    assert len(result) == 8 and result.summary["grid"]["jobs"] == 8
    assert set(result.columns()) >= {"job_id", "submit_time", "start_time", "end_time", "procs", "site"}
    pd = pytest.importorskip("pandas")
    frame = result.to_pandas()
    assert isinstance(frame, pd.DataFrame) and list(frame["job_id"]) == list(range(1, 9))
    cmp = metasched.compare(jobs, plat, ["least-load", "k-reservations:k=2"])
    assert [r.policy for r in cmp] == ["least-load", "k-reservations:k=2"]


def test_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ```python block of docs/simulator.md runs (in a scratch directory with its files)."""
    text = (REPO / "docs" / "simulator.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert blocks
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sites.toml").write_text((REPO / "docs" / "examples" / "sites.toml").read_text())
    scope: dict = {}
    for block in blocks:
        exec(compile(block, "docs/simulator.md", "exec"), scope)
