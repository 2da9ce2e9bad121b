"""ETC loaders and generators: the Braun files, range-based, CVB, SmartNet's two models."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from metasched.model.etc import makespan
from metasched.policy.mapping import MinMin
from metasched.workload.etc import (
    BRAUN_NAMES,
    NasTable,
    braun_like,
    cvb,
    cvb_like,
    range_based,
    read_braun,
    smartnet_academic,
    smartnet_production,
    write_braun,
)

SHARED = Path(os.environ.get("METASCHED_SHARED", Path(__file__).resolve().parents[2] / ".." / "shared"))
ETC_DIR = SHARED / "data" / "etc"
NAS_CSV = SHARED / "data" / "nas" / "smartnet_etc.csv"
needs_braun = pytest.mark.skipif(not ETC_DIR.is_dir(), reason=f"shared Braun instances not found at {ETC_DIR}")
needs_nas = pytest.mark.skipif(not NAS_CSV.is_file(), reason=f"shared NAS table not found at {NAS_CSV}")


@needs_braun
def test_braun_files_load_task_major_and_min_min_matches_the_literature() -> None:
    inst = read_braun(ETC_DIR / "u_c_hihi.0.gz")
    assert inst.etc.shape == (512, 16)
    assert (np.diff(inst.etc, axis=1) >= 0).all()  # consistent: machine 0 fastest for every task
    assert makespan(inst.etc, inst.ready, MinMin()(inst.etc)) == pytest.approx(8_460_675.0, abs=0.01)
    semi = read_braun(ETC_DIR / "u_s_lolo.0.gz")
    assert (np.diff(semi.etc[:, 0::2], axis=1) >= 0).all()
    assert not (np.diff(semi.etc[:, 1::2], axis=1) >= 0).all()
    assert len(BRAUN_NAMES) == 12 and all((ETC_DIR / f"{n}.gz").is_file() for n in BRAUN_NAMES)


def test_braun_round_trip_and_gogos_header(tmp_path: Path) -> None:
    inst = range_based(np.random.default_rng(0), 8, 3, consistency="c")
    write_braun(tmp_path / "x.0", inst)
    back = read_braun(tmp_path / "x.0", 8, 3)
    assert np.allclose(back.etc, inst.etc, atol=1e-6)
    (tmp_path / "y").write_text("2 2 0\n1.0\n2.0\n3.0\n4.0\n")
    assert read_braun(tmp_path / "y").etc.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    (tmp_path / "z").write_text("1.0\n2.0\n")
    with pytest.raises(ValueError, match="expected 8 x 3"):
        read_braun(tmp_path / "z", 8, 3)


@pytest.mark.parametrize("kind", ["c", "i", "s"])
def test_range_based_ranges_and_consistency(kind: str) -> None:
    inst = range_based(np.random.default_rng(1), 200, 8, task_range=100, machine_range=10, consistency=kind)
    e = inst.etc
    assert e.min() >= 1 and e.max() < 100 * 10
    assert (e.max(axis=1) / e.min(axis=1)).max() < 10
    sorted_rows = (np.diff(e, axis=1) >= 0).all()
    assert sorted_rows == (kind == "c")
    if kind == "s":
        assert (np.diff(e[:, 0::2], axis=1) >= 0).all()


def test_generators_are_seeded() -> None:
    a = braun_like(np.random.default_rng(5), "u_s_hilo", 20, 4)
    b = braun_like(np.random.default_rng(5), "u_s_hilo", 20, 4)
    assert np.array_equal(a.etc, b.etc)
    with pytest.raises(ValueError, match="u_c_hihi"):
        braun_like(np.random.default_rng(0), "c_hihi")
    with pytest.raises(ValueError, match="consistency"):
        range_based(np.random.default_rng(0), consistency="sorted")


@pytest.mark.parametrize("machine_first", [False, True])
def test_cvb_mean_and_row_spread(machine_first: bool) -> None:
    inst = cvb(
        np.random.default_rng(2), 4000, 16, mean_task=1000, task_cov=0.5, machine_cov=0.3, machine_first=machine_first
    )
    e = inst.etc
    assert e.mean() == pytest.approx(1000, rel=0.1)
    if not machine_first:
        row_cov = e.std(axis=1, ddof=1) / e.mean(axis=1)
        assert np.median(row_cov) == pytest.approx(0.3, rel=0.15)
        q = e.mean(axis=1)
        assert q.std() / q.mean() == pytest.approx(0.5, rel=0.15)
    consistent = cvb(np.random.default_rng(2), 50, 5, consistency="consistent").etc
    assert (np.diff(consistent, axis=1) >= 0).all()


def test_academic_model() -> None:
    inst = smartnet_academic(np.random.default_rng(3), 2000, 400)
    t = inst.etc[:, 0] * 1  # times on machine 0 = t_i / s_0
    ratios = inst.etc / inst.etc[:, :1]
    assert np.allclose(ratios, ratios[0])  # faster machines run every task faster
    assert (np.diff(np.argsort(inst.etc, axis=1, kind="stable"), axis=0) == 0).all()
    speeds = inst.etc[0, 0] / inst.etc[0]
    s0 = speeds * 1.0
    assert t.size == 2000 and s0.size == 400


@needs_nas
def test_production_model_draws_from_the_nas_table() -> None:
    table = NasTable.read(NAS_CSV)
    assert table.jobs == ("EP", "MG", "CG", "FT", "IS", "LU", "SP", "BT")
    assert np.isinf(table.times[table.jobs.index("LU"), 0])
    inst = smartnet_production(np.random.default_rng(4), table)
    assert inst.etc.shape == (100, 20)
    for i, kind in enumerate(inst.task_kinds):
        for j, mach in enumerate(inst.machine_kinds):
            assert inst.etc[i, j] == table.times[table.jobs.index(kind), table.machines.index(mach)]


def test_nas_table_errors(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("# c\nfoo,1\nEP,1.0\n")
    with pytest.raises(ValueError, match="header"):
        NasTable.read(tmp_path / "t.csv")


@pytest.mark.parametrize("kind", ["c_hihi", "i_lohi", "s_hilo", "i_lolo"])
def test_cvb_cases(kind: str) -> None:
    inst = cvb_like(np.random.default_rng(6), kind, 300, 8)
    assert inst.etc.shape == (300, 8) and (inst.etc >= 0).all()
    row_cov = np.median(inst.etc.std(axis=1, ddof=1) / inst.etc.mean(axis=1))
    assert (row_cov > 0.3) == (kind.endswith("hi"))
    with pytest.raises(ValueError):
        cvb_like(np.random.default_rng(0), "x_hihi_1")
