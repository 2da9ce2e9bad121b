"""The sabin2003 experiment: Table 1, the workload construction, one run, the CLI end to end."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.experiments import sabin2003 as exp
from metasched.model import Job
from metasched.model.platform import Platform, SiteSpec
from metasched.sim.multisite import JobColumns

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"


def shared_dir() -> Path:
    env = os.environ.get("METASCHED_SHARED")
    return Path(env) if env else (REPO / ".." / "shared").resolve()


TABLE = shared_dir() / "data" / "nas" / "sabin2003_table1.csv"
needs_table = pytest.mark.skipif(not TABLE.is_file(), reason=f"shared Table 1 not found at {TABLE}")


def two_sites() -> Platform:
    """Two sites: kind A runs 2x slower at the first, kind B 2x faster."""
    return Platform(
        "two",
        (SiteSpec("slow", 1, speeds={"A.8": 2.0, "B.8": 0.5}), SiteSpec("ref", 1, speeds={"A.8": 1.0, "B.8": 1.0})),
        kinds=("A.8", "B.8"),
    )


def test_sites_come_from_the_platform_resized_to_the_trace() -> None:
    data = exp.TraceData("T", base_jobs(), 64, two_sites())
    assert [s.procs for s in data.sites] == [64, 64] and data.n_benchmarks == 2
    assert [s.time_factor(0) for s in data.sites] == [2.0, 1.0] and data.sites[0].time_factor(1) == 0.5


@needs_table
def test_the_preset_holds_table1s_factors() -> None:
    """The sabin2003 preset's speeds are Table 1's times over the P2SC's (the shared CSV), in the
    paper's site order (cluster 0: Origin 2000, ..., cluster 3: the P2SC)."""
    import csv

    with TABLE.open() as fh:
        rows = list(csv.reader(line for line in fh if line.strip() and not line.startswith("#")))
    machines, body = rows[0][2:], rows[1:]
    ref = next(i for i, m in enumerate(machines) if "P2SC" in m)
    plat = exp.load_sites()
    assert [s.name for s in plat.sites] == ["origin2000", "sp-wn66", "t3e900", "sp-p2sc"]
    assert list(plat.kinds) == [f"{r[0]}.{r[1]}" for r in body]
    for m, site in enumerate(plat.sites):
        for r in body:
            times = [float(x) for x in r[2:]]
            assert site.factor(f"{r[0]}.{r[1]}") == times[m] / times[ref]


def test_load_sites_refuses_what_is_neither_preset_nor_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="neither a preset"):
        exp.load_sites(str(tmp_path / "missing.toml"))


#: Table 1's shape (four machines, the P2SC the reference), made-up times
FOUR_MACHINES = [
    ["benchmark", "nodes", "Origin", "SP WN", "T3E", "IBM SP (P2SC 160 MHz)"],
    ["A", "8", "10", "30", "20", "15"],
    ["B", "16", "12", "9", "6", "10"],
    ["C", "32", "40", "41", "30", "35"],
    ["D", "64", "8", "20", "12", "16"],
]


def base_jobs() -> list[Job]:
    return [Job(i + 1, 100.0 + 50 * i, 10.0 * (i + 1), 20.0 * (i + 1), 1 + i % 3) for i in range(6)]


def test_build_workload_copies_shifts_and_draws() -> None:
    w = exp.build_workload(base_jobs(), n_sites=4, n_benchmarks=4, load=1.5, seed=7, transfer=True)
    assert len(w) == 24 and [j.job_id for j in w] == list(range(1, 25))
    by_home = {k: [j for j in w if j.home_site == k] for k in range(4)}
    assert all(len(v) == 6 for v in by_home.values())
    assert [j.submit_time for j in by_home[0]] == [50.0 * i for i in range(6)]  # rebased
    assert [j.submit_time for j in by_home[2]] == [exp.SHIFT_S + 50.0 * i for i in range(6)]
    assert [j.run_time for j in by_home[1]] == [15.0 * (i + 1) for i in range(6)]
    assert all(400.0 <= j.attrs["transfer_s"] <= 2400.0 for j in w)
    again = exp.build_workload(base_jobs(), n_sites=4, n_benchmarks=4, load=1.0, seed=7)
    assert [j.app_class for j in again] == [j.app_class for j in w]  # draws do not depend on the load
    other = exp.build_workload(base_jobs(), n_sites=4, n_benchmarks=4, load=1.0, seed=8)
    assert [j.app_class for j in other] != [j.app_class for j in w]


def test_draw_workload_leaves_the_cached_copies_as_they_are() -> None:
    # TraceData.copies is computed once and shared by every task of a sweep
    merged = exp.site_copies(base_jobs(), n_sites=4)

    def fields(jobs: list[Job]) -> list[tuple[object, ...]]:
        return [(j.job_id, j.submit_time, j.run_time, j.requested_time, j.app_class, dict(j.attrs)) for j in jobs]

    before = fields(merged)
    w = exp.draw_workload(merged, n_benchmarks=4, load=2.0, seed=3, transfer=True)
    assert fields(merged) == before
    assert [j.run_time for j in w] == [2.0 * j.run_time for j in merged]
    assert all("transfer_s" in j.attrs for j in w)


@st.composite
def trace_heads(draw: st.DrawFn) -> list[Job]:
    """A trace's first jobs in any order: equal submit times, fractional ones, home sites set or
    not, benchmarks and transfer times already there on some."""
    jobs = []
    for i in range(draw(st.integers(0, 12))):
        submit = draw(st.sampled_from([0.0, 7.0, 7.0, 1e9 + 0.1, 86400.25])) + draw(st.integers(0, 3)) * 0.1
        attrs = {"transfer_s": draw(st.sampled_from([0.0, 12.5]))} if draw(st.booleans()) else {}
        jobs.append(
            Job(
                draw(st.integers(1, 10**6)) * 13 + i,
                submit,
                float(draw(st.integers(0, 500))),
                float(draw(st.integers(1, 900))) / 3,
                draw(st.integers(1, 64)),
                home_site=draw(st.integers(-1, 5)),
                app_class=draw(st.integers(-1, 3)),
                attrs=attrs,
            )
        )
    return jobs


@given(trace_heads(), st.integers(1, 5), st.sampled_from([0.0, 10800.0, 0.3]), st.sets(st.integers(0, 4)))
@settings(max_examples=200, deadline=None)
def test_site_columns_are_the_columns_of_the_site_copies(
    base: list[Job], n_sites: int, shift: float, shifted: set[int]
) -> None:
    """The sweep's columns, built without a Job per copy, equal the columns of the copies (the
    rebased, shifted, merged, renumbered jobs) in their order, floats bit for bit."""
    got = exp.site_columns(base, n_sites=n_sites, shift_s=shift, shifted=shifted)
    want = JobColumns.from_jobs(exp.site_copies(base, n_sites=n_sites, shift_s=shift, shifted=shifted))
    for name in ("job_id", "submit_time", "run_time", "requested_time", "requested_procs", "home_site"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert np.array_equal(got.app_class, want.app_class) and np.array_equal(got.transfer_s, want.transfer_s)
    assert got.submit_time.dtype == np.float64 and got.job_id.dtype == np.int64


def test_site_columns_refuse_a_shift_before_zero() -> None:
    with pytest.raises(ValueError, match="negative"):
        exp.site_columns(base_jobs(), n_sites=3, shift_s=-1.0, shifted={1})
    with pytest.raises(ValueError, match="negative"):
        exp.site_copies(base_jobs(), n_sites=3, shift_s=-1.0, shifted={1})


def four_machines(tmp_path: Path | None = None) -> Platform:
    """Table 1's shape (four sites, the last the reference), the made-up times of FOUR_MACHINES."""
    times = [[float(x) for x in row[2:]] for row in FOUR_MACHINES[1:]]
    kinds = tuple(f"{row[0]}.{row[1]}" for row in FOUR_MACHINES[1:])
    return Platform(
        "four",
        tuple(
            SiteSpec(name, 1, speeds={k: t[m] / t[3] for k, t in zip(kinds, times, strict=True)})
            for m, name in enumerate(FOUR_MACHINES[0][2:])
        ),
        kinds=kinds,
    )


def test_draw_columns_draws_the_jobs_draw_workload_draws(tmp_path: Path) -> None:
    """The sweep's columns (no Job objects) hold exactly the jobs of :func:`draw_workload`."""
    data = exp.TraceData("T", base_jobs(), 4, four_machines(tmp_path))
    for load, transfer in ((1.0, False), (1.6, True), (2.0, True)):
        jobs = exp.draw_workload(data.copies, n_benchmarks=4, load=load, seed=5, transfer=transfer)
        cols = exp.draw_columns(data.columns, n_benchmarks=4, load=load, seed=5, transfer=transfer)
        want = JobColumns.from_jobs(jobs)
        for name in ("job_id", "submit_time", "run_time", "requested_time", "requested_procs", "home_site"):
            assert np.array_equal(getattr(cols, name), getattr(want, name)), name
        assert np.array_equal(cols.app_class, want.app_class) and np.array_equal(cols.transfer_s, want.transfer_s)


@pytest.mark.parametrize("scheme", sorted(exp.SCHEMES))
def test_the_sweeps_fast_path_gives_the_reference_rows(scheme: str, tmp_path: Path) -> None:
    """Every scheme's row from columns through the compiled loop equals the row of the Python
    driver on Job objects (the reference), floats bit for bit, at two loads."""
    jobs = [
        Job(
            i + 1,
            37.0 * i + (i % 5) * 11.0,
            40.0 + (i * 53) % 400,
            60.0 + (i * 53) % 400 + (i * 31) % 300,
            1 + (i * 7) % 8,
        )
        for i in range(40)
    ]
    data = exp.TraceData("T", jobs, 8, four_machines(tmp_path))
    for load in (1.0, 1.8):
        task = exp.Task("T", load, scheme)
        assert exp.run_task(task, data, 3) == exp.run_task(task, data, 3, kernel=False)


def test_every_figure_names_known_schemes() -> None:
    assert sorted(exp.FIGURES) == list(range(1, 15))
    for fig in exp.FIGURES.values():
        assert set(fig.series) <= set(exp.SCHEMES)
    assert exp.schemes_for([1]) == ["greedy", "mr-easy"]


def test_run_task_and_summary(tmp_path: Path) -> None:
    data = {"T": exp.TraceData("T", base_jobs(), 4, two_sites())}
    rows = exp.run_sweep(data, ["greedy", "mr-easy", "single-easy"], [1.0, 2.0], seed=1, workers=1)
    assert [(r["load_factor"], r["scheme"]) for r in rows] == [
        (1.0, "greedy"),
        (1.0, "mr-easy"),
        (1.0, "single-easy"),
        (2.0, "greedy"),
        (2.0, "mr-easy"),
        (2.0, "single-easy"),
    ]
    assert rows == exp.run_sweep(data, ["greedy", "mr-easy", "single-easy"], [1.0, 2.0], seed=1, workers=1)
    # two worker processes: the same rows; ``meanwhile`` runs once in this process, with the pool
    calls: list[int] = []
    pooled = exp.run_sweep(
        data, ["greedy", "mr-easy", "single-easy"], [1.0, 2.0], seed=1, workers=2,
        meanwhile=lambda: calls.append(os.getpid()),
    )  # fmt: skip
    assert pooled == rows and calls == [os.getpid()]
    md = exp.summary_markdown(rows, ["T"], "cmd", ["a note"])
    assert "Greedy-MR (K=4) lowers turnaround" in md and "a note" in md
    assert "Efficacy priority" not in md  # claims without runs are left out


def test_cli_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["experiment", "sabin2003", "--figure", "1", "--trace", str(DATA / "swf_tiny.swf"), "--jobs", "5"]
    args += ["--load", "1.0", "--load", "1.4", "--workers", "1", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == {
        "runs.csv", "fig01.csv", "fig01.png", "summary.md", "runs.partial.jsonl", "setup.json"
    }  # fmt: skip
    summary = (out / "summary.md").read_text()
    assert "| S1 |" in summary and "| swf_tiny | swf_tiny.swf" in summary
    # An interrupted sweep: one simulation saved (and a line cut short by the kill); --resume
    # runs only the three others and gives the same table.
    full = (out / "runs.csv").read_text()
    partial = out / "runs.partial.jsonl"
    lines = partial.read_text().splitlines()
    assert len(lines) == 4
    partial.write_text(lines[0] + "\n" + lines[1][:20])
    (out / "runs.csv").unlink()
    resumed = CliRunner().invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert "resuming: 1 simulations" in resumed.output
    assert (out / "runs.csv").read_text() == full
    assert len(partial.read_text().splitlines()) == 4  # the cut line dropped, three new ones appended
    # --replot: figures and summary again from runs.csv alone, same tables.
    figure_csv = (out / "fig01.csv").read_text()
    for name in ("fig01.csv", "fig01.png", "summary.md"):
        (out / name).unlink()
    replot = CliRunner().invoke(app, ["experiment", "sabin2003", "--figure", "1", "--replot", "--out", str(out)])
    assert replot.exit_code == 0, replot.output
    assert (out / "fig01.csv").read_text() == figure_csv and (out / "fig01.png").stat().st_size > 0
    assert "Redrawn by --replot" in (out / "summary.md").read_text()
    assert "| swf_tiny | swf_tiny.swf" in (out / "summary.md").read_text()  # the traces as run, from setup.json
    missing = CliRunner().invoke(app, ["experiment", "sabin2003", "--replot", "--out", str(tmp_path / "none")])
    assert missing.exit_code != 0 and "run the sweep first" in missing.output
    # Other inputs: refused, nothing overwritten.
    other = CliRunner().invoke(app, [*[a if a != "5" else "4" for a in args], "--resume"])
    assert other.exit_code != 0 and "written for other inputs" in other.output
    bad = CliRunner().invoke(app, ["experiment", "sabin2003", "--figure", "15", "--out", str(out)])
    assert bad.exit_code != 0 and "figures 1-14" in bad.output
    # --procs: the site size per trace, stated in the summary; a label no trace has is refused
    sized = tmp_path / "sized"
    ok = CliRunner().invoke(app, [*[a if a != str(out) else str(sized) for a in args], "--procs", "swf_tiny=20"])
    assert ok.exit_code == 0, ok.output
    (line,) = [x for x in (sized / "summary.md").read_text().splitlines() if x.startswith("| swf_tiny | swf_tiny.swf")]
    assert line.split(" | ")[2] == "20"
    narrow = CliRunner().invoke(app, [*args, "--procs", "15"])
    assert narrow.exit_code == 2 and "a job needs 16 processors, the sites have 15" in _flat(narrow.output)
    wrong = CliRunner().invoke(app, [*args, "--procs", "CTC=430"])
    assert wrong.exit_code == 2 and "no trace labelled 'CTC'" in _flat(wrong.output)


def _flat(text: str) -> str:
    """A Rich error box's text on one line."""
    return " ".join(text.replace("│", " ").split())


RESULTS = REPO / "docs" / "results" / "sabin2003-5000"


def test_the_committed_full_size_results_are_one_consistent_sweep(tmp_path: Path) -> None:
    """docs/results/sabin2003-5000 (linked from the README) holds the full sweep, and each
    figure's CSV is what this code derives from its runs.csv (so a change to the schemes or
    figures that leaves the published results behind fails here)."""
    from metasched.cli.experiment.sabin2003 import _read_runs

    rows = _read_runs(RESULTS / "runs.csv")
    cells = {(r["trace"], r["load_factor"], r["scheme"]) for r in rows}
    assert cells == {(t, f, s) for t in ("CTC", "SDSC") for f in exp.LOAD_FACTORS for s in exp.schemes_for(exp.FIGURES)}
    assert len(rows) == len(cells) and all(r["jobs"] == 20000 for r in rows)
    for n, fig in exp.FIGURES.items():
        exp.write_csv(tmp_path / f"fig{n:02d}.csv", exp.figure_rows(rows, fig))
        assert (tmp_path / f"fig{n:02d}.csv").read_bytes() == (RESULTS / f"fig{n:02d}.csv").read_bytes(), n
        assert (RESULTS / f"fig{n:02d}.png").stat().st_size > 10_000


def test_split_stream_deals_one_stream_round_robin_hand_worked() -> None:
    """Six jobs submitted at 100, 150, ..., 350 (rebased: 0, 50, ..., 250) dealt to three sites:
    homes 0, 1, 2, 0, 1, 2; the jobs of site 1 move by 100 s (shift 100, shifted {1}): submit
    times 0, 150, 100, 150, 300, 250 -> merged by time, then by place: ids 1..6 in that order."""
    got = exp.split_stream(base_jobs(), n_sites=3, shift_s=100.0, shifted={1})
    assert [(j.job_id, j.submit_time, j.home_site, j.run_time) for j in got] == [
        (1, 0.0, 0, 10.0),
        (2, 100.0, 2, 30.0),
        (3, 150.0, 1, 20.0),
        (4, 150.0, 0, 40.0),
        (5, 250.0, 2, 60.0),
        (6, 300.0, 1, 50.0),
    ]


@given(n=st.integers(0, 30), n_sites=st.integers(1, 5))
@settings(max_examples=30, deadline=None)
def test_split_stream_keeps_every_job_once(n: int, n_sites: int) -> None:
    jobs = [Job(i + 1, float((i * 37) % 11), 5.0 + i, 9.0 + i, 1) for i in range(n)]
    got = exp.split_stream(jobs, n_sites=n_sites)
    assert sorted(j.run_time for j in got) == sorted(j.run_time for j in jobs)
    assert [j.job_id for j in got] == list(range(1, n + 1))
    assert [j.submit_time for j in got] == sorted(j.submit_time for j in got)


def test_study_variants_are_labelled_and_sized() -> None:
    data = {"T": exp.TraceData("T", base_jobs(), 8, four_machines())}
    assert {k: v.procs for k, v in exp.study_variants("s3-procs", data).items()} == {"T": 8, "T@430": 430}
    arr = exp.study_variants("arrivals", data)
    assert {k: v.arrivals for k, v in arr.items()} == {"T": "copies", "T [split]": "split"}
    assert len(arr["T [split]"].copies) == len(base_jobs()) and len(arr["T"].copies) == 4 * len(base_jobs())
    assert list(exp.study_variants("cancel-slower", data)) == ["T"]


def test_cli_study_writes_its_table_figure_and_summary(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["experiment", "sabin2003", "--trace", str(DATA / "swf_tiny.swf"), "--jobs", "5", "--load", "1.0"]
    result = CliRunner().invoke(app, [*args, "--workers", "1", "--study", "cancel-slower", "--out", str(out)])
    assert result.exit_code == 0, result.output
    study = out / "study-cancel-slower"
    assert {p.name for p in study.iterdir()} >= {"runs.csv", "study.csv", "study.png", "summary.md"}
    md = (study / "summary.md").read_text()
    assert "| S4 |" in md and "| S4 (no-kill) |" in md
    means = (study / "study.csv").read_text()
    (study / "study.csv").unlink()
    again = CliRunner().invoke(
        app, ["experiment", "sabin2003", "--replot", "--study", "cancel-slower", "--out", str(out)]
    )
    assert again.exit_code == 0, again.output
    assert (study / "study.csv").read_text() == means
    bad = CliRunner().invoke(app, [*args, "--study", "nope", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown study" in bad.output
