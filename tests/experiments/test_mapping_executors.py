"""smartnet1998 and braun2001 through the embedded metaqueue and a real Dask cluster (a ``dask
scheduler`` and two ``dask worker`` processes): the same rows as the local pool, byte for byte."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from metasched.experiments import braun2001, runner, smartnet1998
from metasched.sim.metrics import write_rows_csv
from metasched.workload.etc import NasTable
from tests.experiments.test_runner import dask_cluster  # noqa: F401  (the fixture)

SHARED = Path(os.environ.get("METASCHED_SHARED", Path(__file__).resolve().parents[2] / ".." / "shared"))
NAS = SHARED / "data" / "nas" / "smartnet_etc.csv"
ETC = SHARED / "data" / "etc"
pytestmark = pytest.mark.skipif(not (NAS.is_file() and ETC.is_dir()), reason=f"shared data not found at {SHARED}")

SN = {"problems": 30, "noise_problems": 5, "sigmas": (0.0, 0.2)}
BRAUN = {
    "instances": ["u_i_lolo.0"],
    "mappers": ["min-min", "tabu", "ils+lp"],
    "iterations": {"tabu": 10, "ils+lp": 10},
}


def _bytes(rows: list[dict[str, Any]], path: Path) -> bytes:
    write_rows_csv(path, rows)
    return path.read_bytes()


def _both(tmp_path: Path, executor: Any, tag: str) -> None:
    table = NasTable.read(NAS)
    setups = [smartnet1998.Setup(), smartnet1998.Setup(tie="random")]
    local = smartnet1998.run(table, setups, workers=2, **SN)  # type: ignore[arg-type]
    remote = smartnet1998.run(table, setups, executor=executor, stage_dir=tmp_path / "stage", **SN)  # type: ignore[arg-type]
    assert remote.ratios == local.ratios and remote.noise == local.noise
    assert _bytes(remote.ratios, tmp_path / f"{tag}-r.csv") == _bytes(local.ratios, tmp_path / "l-r.csv")
    assert _bytes(remote.noise, tmp_path / f"{tag}-n.csv") == _bytes(local.noise, tmp_path / "l-n.csv")
    b_local = braun2001.run(ETC, workers=2, **BRAUN)  # type: ignore[arg-type]
    b_remote = braun2001.run(ETC, executor=executor, stage_dir=tmp_path / "stage", **BRAUN)  # type: ignore[arg-type]
    assert _bytes(b_remote.rows, tmp_path / f"{tag}-b.csv") == _bytes(b_local.rows, tmp_path / "l-b.csv")


@pytest.mark.timeout(600)
def test_metaqueue_gives_the_local_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from metasched.runtime.sweep_executor import MetaqueueExecutor

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    mq = MetaqueueExecutor(tmp_path / "mq", placeholders=2)
    try:
        _both(tmp_path, mq, "mq")
        jobs = mq.store.jobs()
    finally:
        mq.shutdown()
    assert jobs and all(j["state"] == "done" for j in jobs)


@pytest.mark.timeout(600)
def test_dask_gives_the_local_rows(tmp_path: Path, dask_cluster: str) -> None:  # noqa: F811
    executor, close = runner.make_executor(dask_cluster, workers=2)
    try:
        _both(tmp_path, executor, "dask")
    finally:
        close()
