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


# ----------------------------------------------------------------------------- claims as data

_MACHINES = {"Cluster1": 8, "Cluster2": 4, "Cluster3": 2, "Cluster4": 1}
_CASES = ("ms", "ls", "none")


def _hand_made(unit: str, tas: tuple[float, ...], cases: tuple[str, ...], over: dict[tuple[Any, ...], Any]) -> Any:
    """One repetition of every (Ta, case, cluster); neutral values, ``over[(ta, case, cluster,
    metric)]`` replacing them (``case`` / ``cluster`` None: every one)."""
    rows: list[dict[str, Any]] = []
    timings: list[dict[str, Any]] = []

    def value(ta: float, case: str, cluster: str, metric: str, default: Any) -> Any:
        for key in ((ta, case, cluster, metric), (ta, None, cluster, metric), (ta, case, None, metric)):
            if key in over:
                return over[key]
        return default

    for ta in tas:
        for case in cases:
            key = {"time_unit": unit, "ta": ta, "case": case, "rep": 0}
            for c, m in [*_MACHINES.items(), ("all", 15)]:
                rows.append(
                    key
                    | {
                        "cluster": c,
                        "machines": m,
                        "workload_share": value(ta, case, c, "workload_share", 0.25),
                        "optimal_share": m / 15,
                        "power_share": m / 15,
                        "jobs_with_deadline": 400,
                        "missed_deadline": value(ta, case, c, "missed_deadline", 0),
                        "missed_deadline_pct": value(ta, case, c, "missed_deadline_pct", 0.0),
                        "cpu_usage_pct": value(ta, case, c, "cpu_usage_pct", 50.0),
                        "licence_usage_pct": value(ta, case, c, "licence_usage_pct", 50.0),
                        "slowdown_no_deadline": value(ta, case, c, "slowdown_no_deadline", 2.0),
                    }
                )
            timings.append(key | {"ls_us_per_pass": {"ms": 100.0, "ls": 300.0, "none": 90.0}[case]})
    return rows, timings


def _per_cluster(ta: float, case: str | None, metric: str, vals: tuple[Any, ...]) -> dict[tuple[Any, ...], Any]:
    return {(ta, case, c, metric): v for c, v in zip(_MACHINES, vals, strict=True)}


def test_hand_made_results_give_the_known_verdicts() -> None:
    from metasched.experiments.claims import FAILS, HOLDS, NOT_RUN, evaluate
    from metasched.experiments.pasquali2010 import CLAIMS, claim_rows

    over: dict[tuple[Any, ...], Any] = {
        # P1: shares at Ta = 0 within 1 point of 25% -> holds (1.0 point)
        **_per_cluster(0.0, "ms", "workload_share", (0.25, 0.26, 0.24, 0.25)),
        # P2: distance to optimal 6.67 points at Ta = 5, 6.0 at Ta = 15 -> does not hold (+0.67)
        **_per_cluster(5.0, "ms", "workload_share", (0.50, 0.27, 0.15, 0.08)),
        **_per_cluster(15.0, "ms", "workload_share", (0.55, 0.25, 0.12, 0.08)),
        # P4 (lowest 1.5) holds; P5: 1.5, 2.0, 3.0, 2.5 -> does not hold (-0.5)
        **_per_cluster(5.0, None, "slowdown_no_deadline", (1.5, 2.0, 3.0, 2.5)),
        # P6 (-10) and P7 (-5) hold; P8 (ms - ls = -5) does not
        (5.0, "ms", "all", "missed_deadline_pct"): 40.0,
        (5.0, "ls", "all", "missed_deadline_pct"): 45.0,
        (5.0, "none", "all", "missed_deadline_pct"): 50.0,
        # P10: 150 jobs in Cluster1 holds; P11: 3 in Cluster4 holds
        (5.0, "ms", "Cluster1", "missed_deadline"): 150,
        (5.0, "ms", "Cluster4", "missed_deadline"): 3,
        # P12: processor spread 2 points holds; P14: 90, 85, 80, 70 falls at every step, holds (5)
        **_per_cluster(5.0, "ms", "cpu_usage_pct", (90.0, 85.0, 80.0, 70.0)),
        **_per_cluster(5.0, "ls", "cpu_usage_pct", (92.0, 85.0, 80.0, 70.0)),
        **_per_cluster(5.0, "none", "cpu_usage_pct", (91.0, 85.0, 80.0, 70.0)),
        # P13: licence spread 10 points (Cluster2) fails; P15: 80, 60, 70, 50 rises once, fails (-10)
        **_per_cluster(5.0, "ms", "licence_usage_pct", (80.0, 60.0, 70.0, 50.0)),
        **_per_cluster(5.0, "ls", "licence_usage_pct", (80.0, 70.0, 70.0, 50.0)),
        **_per_cluster(5.0, "none", "licence_usage_pct", (80.0, 65.0, 70.0, 50.0)),
    }
    rows, timings = _hand_made("seconds", (0.0, 5.0, 15.0), _CASES, over)
    # a second reading without Ta = 15 nor LS heuristics: what needs them is "not run"
    rows2, timings2 = _hand_made("minutes", (0.0, 5.0), ("ms", "none"), over)
    verdicts = evaluate(CLAIMS, claim_rows(rows + rows2, timings + timings2), ["seconds", "minutes"])
    got = {(v.claim.id, v.trace): (v.verdict, v.measure.value if v.measure else None) for v in verdicts}
    want = {
        "P1": (HOLDS, 1.0),
        "P2": (FAILS, 100 * (0.2 / 3) - 6.0),
        "P3": (HOLDS, 5.0),
        "P4": (HOLDS, 1.5),
        "P5": (FAILS, -0.5),
        "P6": (HOLDS, -10.0),
        "P7": (HOLDS, -5.0),
        "P8": (FAILS, -5.0),
        "P9": (HOLDS, -200 / 3),
        "P10": (HOLDS, 150.0),
        "P11": (HOLDS, 3.0),
        "P12": (HOLDS, 2.0),
        "P13": (FAILS, 10.0),
        "P14": (HOLDS, 5.0),
        "P15": (FAILS, -10.0),
    }
    for cid, (verdict, val) in want.items():
        v, x = got[(cid, "seconds")]
        assert v == verdict, cid
        assert x is not None and abs(x - val) < 1e-9, (cid, x, val)
    minutes = {cid: got[(cid, "minutes")][0] for cid in want}
    assert {c for c, v in minutes.items() if v == NOT_RUN} == {"P3", "P7", "P8", "P9"}
    # Ta = 0 vs Ta = 5 only: 5 is much closer to the optimal than 0 (where every share is 25%)
    assert minutes["P2"] == HOLDS and minutes["P6"] == HOLDS


def test_summary_states_only_the_runs_numbers(tmp_path: Path) -> None:
    """Two runs whose rows differ give summaries that differ where their numbers do, and the
    verdict table follows the rows (no fixed sentence about a result)."""
    from metasched.experiments.pasquali2010 import summary_markdown

    cfg = Pasquali2010Config(tas=(0.0, 5.0, 15.0), repetitions=1)
    base: dict[tuple[Any, ...], Any] = {(5.0, "ms", "all", "missed_deadline_pct"): 40.0}
    rows, timings = _hand_made("seconds", cfg.tas, _CASES, base)
    for t in timings:
        t |= {"sim_seconds": 1.0, "sim_cpu_seconds": 1.0, "offered_load": 8.0, "makespan_s": 1e5}
    text = summary_markdown(cfg, rows, timings, [], 12.0)
    assert "| P6 | Ta = 5: MS heuristics miss fewer deadlines than No heuristics | fewer | 40 points" in text
    assert "**does not hold**" in text.split("| P6 |")[1].split("\n")[0]
    rows2, _ = _hand_made("seconds", cfg.tas, _CASES, {(5.0, "none", "all", "missed_deadline_pct"): 50.0})
    text2 = summary_markdown(cfg, rows2, timings, [], 12.0)
    assert "| P6 |" in text2 and "| holds |" in text2.split("| P6 |")[1].split("\n")[0]
    assert "overloaded" not in text and "most deadlines" not in text


# ----------------------------------------------------------------------------- replot, time unit, outputs


def test_replot_redraws_the_same_summary_and_csvs_without_simulating(tmp_path: Path) -> None:
    cfg = Pasquali2010Config(
        tas=(0.0, 5.0, 15.0), cases=("ms", "ls", "none"), repetitions=1, workers=1, params=SMALL,
        time_units=("seconds", "minutes"),
    )  # fmt: skip
    rows, timings = run(cfg, tmp_path)
    written = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.suffix in (".md", ".csv")}
    assert {"study_time_unit.csv", "fig4_slowdown_deadlines-minutes.csv", "summary.md"} <= written.keys()
    for name in written:
        if name not in ("clusters.csv", "timing.csv"):
            (tmp_path / name).unlink()
    from metasched.experiments.pasquali2010 import replot

    _, rows2, timings2 = replot(tmp_path)
    assert repr(rows2) == repr(rows) and repr(timings2) == repr(timings)  # nan != nan, repr equal
    for name, data in written.items():
        assert (tmp_path / name).read_bytes() == data, name
    assert (tmp_path / "study_time_unit.png").stat().st_size > 0


def test_figure_csvs_keep_full_precision(tmp_path: Path) -> None:
    import csv

    from metasched.experiments.pasquali2010 import aggregate

    cfg = Pasquali2010Config(tas=(0.0, 5.0), cases=("ms", "none"), repetitions=2, workers=1, params=SMALL)
    rows, _ = run(cfg, tmp_path)
    agg = aggregate(rows, "cpu_usage_pct", "seconds")
    with (tmp_path / "fig5_usage.csv").open() as fh:
        cells = [r for r in csv.DictReader(fh) if r["metric"] == "cpu_usage_pct"]
    assert cells
    for r in cells:
        assert float(r["mean"]) == agg[(float(r["ta"]), r["case"], r["cluster"])][0]


def test_time_unit_scales_the_gaps_only() -> None:
    import numpy as np

    from metasched.workload.pasquali import generate_grid, generate_jobs

    p = PasqualiParams(n_jobs=50, cluster_sizes=(4, 2), mean_interarrival_s=5.0)
    grid = generate_grid(p, np.random.default_rng(1))
    sec = generate_jobs(p, grid, np.random.default_rng(2))
    default = generate_jobs(PasqualiParams(n_jobs=50, cluster_sizes=(4, 2), mean_interarrival_s=5.0,
                                           ta_unit_s=1.0), grid, np.random.default_rng(2))  # fmt: skip
    minutes = generate_jobs(
        PasqualiParams(n_jobs=50, cluster_sizes=(4, 2), mean_interarrival_s=5.0, ta_unit_s=60.0),
        grid,
        np.random.default_rng(2),
    )
    assert [j.submit_time for j in default] == [j.submit_time for j in sec]
    gaps_s = np.diff([j.submit_time for j in sec])
    gaps_m = np.diff([j.submit_time for j in minutes])
    assert np.allclose(gaps_m, 60 * gaps_s)
    assert [(j.run_time, j.requested_procs) for j in minutes] == [(j.run_time, j.requested_procs) for j in sec]
    # the deadline is submission + estimate + margin: the same margin in both readings
    from metasched.model.qos import margin

    assert np.allclose([margin(j) or 0.0 for j in minutes], [margin(j) or 0.0 for j in sec])


def test_offered_load_and_makespan_hand_worked() -> None:
    from metasched.sim.two_level import run_case
    from metasched.sim.two_level_metrics import stream_metrics
    from tests.two_level.helpers import cluster, job

    grid = [cluster([(4, 100.0)], name="C1")]
    jobs = [job(0, submit=0.0, estimate=100.0, cpus=2), job(1, submit=10.0, estimate=100.0, cpus=2)]
    got = stream_metrics(run_case("none", jobs, grid))
    # 2 x (2 CPUs x 100 s) over 4 CPUs x 10 s; both fit at once: ends at 100 and 110
    assert got == {"offered_load": 10.0, "makespan_s": 110.0}
    assert stream_metrics(run_case("none", [job(0), job(1)], grid))["offered_load"] == float("inf")


def test_cli_time_unit_study_and_replot_errors(tmp_path: Path) -> None:
    # A wide terminal: the messages name a long temporary path, which an 80-column error box would fold.
    wide = {"COLUMNS": "1000", "TERMINAL_WIDTH": "1000"}
    base = ["experiment", "pasquali2010", "--out", str(tmp_path), "--repetitions", "1", "--jobs", "30"]
    bad_unit = CliRunner().invoke(app, [*base, "--time-unit", "hours"])
    assert bad_unit.exit_code == 2 and "hours" in bad_unit.output and "Traceback" not in bad_unit.output
    bad_study = CliRunner().invoke(app, [*base, "--study", "cancel"])
    assert bad_study.exit_code == 2 and "time-unit" in bad_study.output
    nothing = CliRunner().invoke(app, [*base, "--replot"], env=wide)
    assert nothing.exit_code == 2 and "run.json" in nothing.output
    ok = CliRunner().invoke(
        app, [*base, "--ta", "0", "--ta", "5", "--case", "ms", "--workers", "1", "--study", "time-unit"]
    )
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "study_time_unit.png").is_file() and "minutes" in (tmp_path / "summary.md").read_text()
    (tmp_path / "timing.csv").write_text("ta,case\n1,ms\n")
    broken = CliRunner().invoke(app, [*base, "--replot"], env=wide)
    assert broken.exit_code == 2 and "timing.csv" in broken.output


def test_metaqueue_executor_gives_the_local_rows_byte_for_byte(tmp_path: Path) -> None:
    from metasched.runtime.sweep_executor import MetaqueueExecutor

    cfg = Pasquali2010Config(
        tas=(0.0, 5.0), cases=("ms", "none"), repetitions=1, workers=1, params=SMALL,
        time_units=("seconds", "minutes"),
    )  # fmt: skip
    run(cfg, tmp_path / "local")
    mq = MetaqueueExecutor(tmp_path / "mq", placeholders=2)
    try:
        run(cfg, tmp_path / "mq-out", executor=mq)
    finally:
        mq.shutdown()
    for name in ("clusters.csv", "fig3_workload_share.csv", "study_time_unit.csv"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "mq-out" / name).read_bytes(), name
