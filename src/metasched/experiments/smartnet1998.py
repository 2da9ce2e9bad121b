"""Seed 002 (Freund et al., SmartNet, 1998), section 3: mapping batches of independent tasks.

1,000 random problems for each of SmartNet's production and academic models; ratios of the
load-balancing (OLB) and user-directed (MET) schedule lengths to SmartNet's (Max-min for
production, Min-min for academic, as the paper chose), Figures 2-6; then the noise study of
section 3.4 (Figures 7-9): mappings computed on estimates, executed on actual times
(Normal(estimate, sigma x estimate) truncated positive), against the dynamic load balancer that
assigns on actual times.

The readings the paper leaves open are parameters of a :class:`Setup`: the problem size (tasks x
machines), how the academic model's machine "relative speeds" enter the ETC matrix (``divide``:
``t / s``, a faster machine runs every task faster; ``multiply``: ``t x s``, the drawn number read
as a slowdown) and the tie rule (``lowest``: every mapper takes the lowest machine index among
equals; ``random``: the machines' order is shuffled per problem, so ties fall at random but the
same way for every task; ``per-task``: the user-directed assignment picks at random among the
equally fast machines task by task, the other mappers as ``lowest``). The
sensitivity studies (:data:`STUDIES`) run the ratio problems under several setups; the claims are
evaluated on each setup (the summary's robustness table).

Work goes through the one sweep runner (:mod:`metasched.experiments.runner`): a task is a chunk of
problems of one kind, setup and model; every random draw comes from ``(seed, model, problem)``
(and the noise level), so rows never depend on the executor, the workers or the order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metasched.experiments.claims import (
    FAILS,
    HOLDS,
    NOT_RUN,
    Claim,
    Interval,
    Measure,
    Rows,
    Verdict,
    claims_tables,
    counts,
    evaluate,
    robustness_table,
)
from metasched.experiments.runner import Row, run_sweep
from metasched.model.etc import EtcInstance, finish_times, lower_bound, makespan
from metasched.policy.mapping import REGISTRY, build_mapper
from metasched.sim.metrics import write_rows_csv
from metasched.workload.etc import NasTable, actual_times, smartnet_academic, smartnet_production

Progress = Callable[[int], None]

MODELS = ("production", "academic")
PAPER_RATIOS = {
    ("production", "olb"): 36.0,
    ("production", "met"): 2.0,
    ("academic", "olb"): 2.2,
    ("academic", "met"): 2.8,
}
SMARTNET_MAPPER = {"production": "max-min", "academic": "min-min"}
GREEDY = ("olb", "met", "mct", "min-min", "max-min", "sufferage", "duplex")
NOISE_SEARCH_ITERATIONS = 50
#: The mappers of the noise study: every registered one but the LP-based (which need SciPy and,
#: for the MIP, seconds per problem).
NOISE_MAPPERS = tuple(k for k in REGISTRY if k not in ("lp-rounding", "mip"))
SIGMAS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
SPEEDS = ("divide", "multiply")
TIES = ("lowest", "random", "per-task")
#: Problems per sweep task (ratio chunks; noise chunks hold a fifth as many).
CHUNK = 25


@dataclass(frozen=True)
class Setup:
    """One reading of the paper's setup (see the module docstring); the default is the paper's text
    as this reproduction reads it: 100 tasks x 20 machines, speeds divide, lowest-index ties."""

    tasks: int = 100
    machines: int = 20
    speed: str = "divide"
    tie: str = "lowest"

    def __post_init__(self) -> None:
        if self.tasks < 1 or self.machines < 1:
            raise ValueError(f"tasks and machines must be positive, got {self.tasks} x {self.machines}")
        if self.speed not in SPEEDS:
            raise ValueError(f"speed {self.speed!r}: expected one of {', '.join(SPEEDS)}")
        if self.tie not in TIES:
            raise ValueError(f"tie {self.tie!r}: expected one of {', '.join(TIES)}")

    @property
    def label(self) -> str:
        return f"{self.tasks}x{self.machines} speed={self.speed} tie={self.tie}"


#: The sensitivity studies (``--study NAME``): the setups each one runs (the paper's reading first).
STUDIES: dict[str, tuple[Setup, ...]] = {
    "speed": (Setup(), Setup(speed="multiply")),
    "ties": (Setup(), Setup(tie="random"), Setup(tie="per-task")),
    "sizes": (
        Setup(),
        Setup(tasks=50),
        Setup(tasks=200),
        Setup(tasks=400),
        Setup(machines=10),
        Setup(machines=50),
    ),
}


def academic_instance(rng: np.random.Generator, setup: Setup) -> EtcInstance:
    """The academic model under ``setup.speed`` (``divide`` is :func:`smartnet_academic` itself;
    ``multiply`` uses the same draws, ``etc = t x s``)."""
    if setup.speed == "divide":
        return smartnet_academic(rng, setup.tasks, setup.machines)
    # the draws of smartnet_academic, in its order: task times, then machine numbers
    t = 10.0 + rng.exponential(990.0, size=(setup.tasks, 1))
    s = 1.0 + rng.exponential(4.0, size=(1, setup.machines))
    return EtcInstance(t * s, name="smartnet-academic")


def instance(model: str, setup: Setup, seed: int, problem: int, table: NasTable | None) -> EtcInstance:
    """Problem ``problem`` of ``model`` (machines shuffled when ``setup.tie`` is ``random``)."""
    rng = np.random.default_rng([seed, MODELS.index(model), problem])
    if model == "production":
        assert table is not None
        inst = smartnet_production(rng, table, setup.tasks, setup.machines)
    else:
        inst = academic_instance(rng, setup)
    if setup.tie == "random":
        # every mapper breaks ties to the lowest machine index: shuffling the machines makes that
        # choice a random one among equals, and changes nothing else
        perm = np.random.default_rng([seed, 4, MODELS.index(model), problem]).permutation(setup.machines)
        inst = EtcInstance(inst.etc[:, perm], inst.ready[perm], name=inst.name)
    return inst


def ratio_rows(model: str, setup: Setup, seed: int, problems: Sequence[int], table: NasTable | None) -> list[Row]:
    """Every greedy mapper's schedule length on each problem, and the paper's two ratios."""
    rows = []
    for p in problems:
        inst = instance(model, setup, seed, p, table)
        row: dict[str, Any] = {"setup": setup.label, "model": model, "problem": p}
        for key in GREEDY:
            row[key] = makespan(inst.etc, inst.ready, REGISTRY[key]().map(inst.etc, inst.ready))
        if setup.tie == "per-task":
            # the user picks at random among equally fast machines, task by task (production
            # machines are drawn with replacement: copies of one machine are equally fast)
            rng = np.random.default_rng([seed, 3, MODELS.index(model), p])
            scores = rng.random(inst.etc.shape)
            scores[inst.etc != inst.etc.min(axis=1, keepdims=True)] = -1.0
            row["met"] = makespan(inst.etc, inst.ready, scores.argmax(axis=1))
        sn = row[SMARTNET_MAPPER[model]]
        row["smartnet"] = sn
        row["lower_bound"] = lower_bound(inst.etc, inst.ready)
        row["lb_ratio"] = row["olb"] / sn
        row["uda_ratio"] = row["met"] / sn
        rows.append(row)
    return rows


def noise_rows(
    model: str, setup: Setup, seed: int, problems: Sequence[int], table: NasTable | None, sigmas: Sequence[float]
) -> list[Row]:
    """Each mapper's plan (from estimates) executed on actual times, and the dynamic load balancer."""
    rows = []
    keys = NOISE_MAPPERS
    for p in problems:
        inst = instance(model, setup, seed, p, table)
        plans = {k: build_mapper(k, seed=p, iterations=NOISE_SEARCH_ITERATIONS).map(inst.etc, inst.ready) for k in keys}
        for s_i, sigma in enumerate(sigmas):
            rng = np.random.default_rng([seed, 2, MODELS.index(model), p, s_i])
            actual = actual_times(rng, inst.etc, sigma)
            for k, a in plans.items():
                rows.append(
                    {"setup": setup.label, "model": model, "sigma": sigma, "problem": p, "mapper": k,
                     "makespan": makespan(actual, inst.ready, a)}
                )  # fmt: skip
            # The dynamic load balancer sees actual times: OLB run on them.
            dyn = REGISTRY["olb"]().map(actual, inst.ready)
            rows.append(
                {"setup": setup.label, "model": model, "sigma": sigma, "problem": p, "mapper": "dynamic-olb",
                 "makespan": float(finish_times(actual, inst.ready, dyn).max())}
            )  # fmt: skip
    return rows


# ------------------------------------------------------------------------------------- the sweep

#: A sweep task: (kind, setup label, model, first problem, end).
Task = tuple[str, str, str, int, int]


@dataclass(frozen=True)
class Context:
    """What every run reads: the NAS table, the setups by label, the seed and the noise levels."""

    table: NasTable
    setups: dict[str, Setup]
    seed: int
    sigmas: tuple[float, ...]


def _work(ctx: Context, task: Task) -> Row:
    kind, label, model, start, stop = task
    setup, table = ctx.setups[label], ctx.table if model == "production" else None
    problems = range(start, stop)
    if kind == "ratios":
        rows = ratio_rows(model, setup, ctx.seed, problems, table)
    else:
        rows = noise_rows(model, setup, ctx.seed, problems, table, ctx.sigmas)
    return {"kind": kind, "setup": label, "model": model, "start": start, "stop": stop, "rows": rows}


def task_of(row: Row) -> Task:
    """The task a journal row came from."""
    return (str(row["kind"]), str(row["setup"]), str(row["model"]), int(row["start"]), int(row["stop"]))


def _chunks(n: int, size: int) -> list[tuple[int, int]]:
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def sweep_tasks(setups: Sequence[Setup], *, problems: int, noise_problems: int) -> list[Task]:
    """The ratio chunks of every setup, then the noise chunks (of the first setup only)."""
    tasks: list[Task] = [
        ("ratios", s.label, m, a, b) for s in setups for m in MODELS for a, b in _chunks(problems, CHUNK)
    ]
    if noise_problems and setups:
        tasks += [("noise", setups[0].label, m, a, b) for m in MODELS for a, b in _chunks(noise_problems, CHUNK // 5)]
    return tasks


@dataclass
class SmartnetResult:
    ratios: list[Row]
    noise: list[Row]


def run(
    table: NasTable,
    setups: Sequence[Setup],
    *,
    problems: int = 1000,
    noise_problems: int = 100,
    sigmas: Sequence[float] = SIGMAS,
    seed: int = 0,
    workers: int = 2,
    executor: Executor | None = None,
    stage_dir: Path | None = None,
    done: Sequence[Row] = (),
    on_done: Callable[[Row], None] | None = None,
    progress: Progress | None = None,
) -> SmartnetResult:
    """Run the sweep (see :func:`sweep_tasks`); the per-problem rows, in task order."""
    if problems < 1 or noise_problems < 0:
        raise ValueError("problems must be >= 1 and noise_problems >= 0")
    if noise_problems and any(not (s >= 0 and math.isfinite(s)) for s in sigmas):
        raise ValueError(f"noise levels must be finite and >= 0, got {list(sigmas)}")
    ctx = Context(table, {s.label: s for s in setups}, seed, tuple(sigmas))
    tasks = sweep_tasks(setups, problems=problems, noise_problems=noise_problems)
    earlier = {task_of(r): r for r in done}

    def finished(_task: Task, row: Row) -> None:
        if on_done is not None:
            on_done(row)

    chunks = run_sweep(
        ctx,
        tasks,
        _work,
        executor=executor,
        workers=workers,
        stage_dir=stage_dir,
        done=earlier,
        on_done=finished,
        progress=progress,
    )
    ratios = [r for c in chunks if c["kind"] == "ratios" for r in c["rows"]]
    noise = [r for c in chunks if c["kind"] == "noise" for r in c["rows"]]
    return SmartnetResult(ratios, noise)


# ------------------------------------------------------------------------------------- claims


def _mean(rows: Rows, setup: str, model: str, column: str) -> float | None:
    vals = [float(r[column]) for r in rows if r.get("setup") == setup and r["model"] == model and column in r]
    return float(np.mean(vals)) if vals else None


def mean_ratio(model: str, column: str, what: str) -> Callable[[Rows, str], Measure | None]:
    """Our value: the mean over the problems of ``column`` (a schedule-length ratio)."""

    def measure(rows: Rows, setup: str) -> Measure | None:
        vals = [float(r[column]) for r in rows if r.get("setup") == setup and r["model"] == model and column in r]
        if not vals:
            return None
        return Measure(float(np.mean(vals)), f"{what}, mean of {len(vals)} problems, median {np.median(vals):.3g}")

    return measure


def _min_over_max(rows: Rows, setup: str) -> Measure | None:
    """Academic: mean Max-min schedule length over mean Min-min's, minus one (percent)."""
    mx, mn = _mean(rows, setup, "academic", "max-min"), _mean(rows, setup, "academic", "min-min")
    if mx is None or mn is None:
        return None
    mine = [r for r in rows if r.get("setup") == setup and r["model"] == "academic" and "min-min" in r]
    wins, n = sum(float(r["min-min"]) < float(r["max-min"]) for r in mine), len(mine)
    return Measure(100.0 * (mx / mn - 1.0), f"Max-min {mx:.4g} vs Min-min {mn:.4g}; Min-min shorter on {wins} of {n}")


def noise_table(noise: Rows) -> dict[tuple[str, str, float], float]:
    """Mean makespan per (model, mapper, sigma)."""
    acc: dict[tuple[str, str, float], list[float]] = {}
    for r in noise:
        acc.setdefault((str(r["model"]), str(r["mapper"]), float(r["sigma"])), []).append(float(r["makespan"]))
    return {k: float(np.mean(v)) for k, v in acc.items()}


def _noise(rows: Rows, setup: str) -> dict[tuple[str, str, float], float] | None:
    mine = [r for r in rows if r.get("setup") == setup and "sigma" in r]
    return noise_table(mine) if mine else None


def _sn_vs_dynamic(model: str) -> Callable[[Rows, str], Measure | None]:
    """Dynamic load balancer over SmartNet at the largest noise level, minus one (percent)."""

    def measure(rows: Rows, setup: str) -> Measure | None:
        tab = _noise(rows, setup)
        if tab is None:
            return None
        top = max(k[2] for k in tab)
        dyn, sn = tab[(model, "dynamic-olb", top)], tab[(model, SMARTNET_MAPPER[model], top)]
        return Measure(100.0 * (dyn / sn - 1.0), f"dynamic LB {dyn:.4g} vs SmartNet {sn:.4g} at sigma {top:g}")

    return measure


def _sensitivity(rows: Rows, setup: str) -> Measure | None:
    """Worst over the models: SmartNet's rise from the lowest to the highest noise level minus the
    dynamic load balancer's (percentage points)."""
    tab = _noise(rows, setup)
    if tab is None:
        return None
    lo, hi = min(k[2] for k in tab), max(k[2] for k in tab)
    if lo == hi:
        return None
    diffs, parts = [], []
    for model in sorted({k[0] for k in tab}):
        sn = SMARTNET_MAPPER[model]
        rise_sn = 100.0 * (tab[(model, sn, hi)] / tab[(model, sn, lo)] - 1.0)
        rise_dyn = 100.0 * (tab[(model, "dynamic-olb", hi)] / tab[(model, "dynamic-olb", lo)] - 1.0)
        diffs.append(rise_sn - rise_dyn)
        parts.append(f"{model}: SmartNet {rise_sn:+.1f}%, dynamic LB {rise_dyn:+.1f}%")
    return Measure(max(diffs), "; ".join(parts) + f" (sigma {lo:g} to {hi:g})")


def _dynamic_rise(rows: Rows, setup: str) -> Measure | None:
    """Production: the dynamic load balancer's rise from the lowest to the highest noise (percent)."""
    tab = _noise(rows, setup)
    if tab is None:
        return None
    lo, hi = min(k[2] for k in tab), max(k[2] for k in tab)
    if lo == hi or ("production", "dynamic-olb", lo) not in tab:
        return None
    a, b = tab[("production", "dynamic-olb", lo)], tab[("production", "dynamic-olb", hi)]
    return Measure(100.0 * (b / a - 1.0), f"{a:.4g} at sigma {lo:g}, {b:.4g} at sigma {hi:g}")


#: Seed 002's claims. Tolerances (this reproduction's reading, fixed before any run): a mean ratio
#: holds within 25% of the paper's number; "superior", "better", "no more sensitive" are signs.
CLAIMS: tuple[Claim, ...] = (
    Claim("F1", "Production: load balancing / SmartNet (Max-min) schedule length", "36 times",
          mean_ratio("production", "lb_ratio", "OLB / Max-min"), Interval(27, 45, "x"), "2"),
    Claim("F2", "Production: user directed / SmartNet schedule length", "2 times",
          mean_ratio("production", "uda_ratio", "MET / Max-min"), Interval(1.5, 2.5, "x"), "3"),
    Claim("F3", "Academic: Min-min is superior to Max-min (Max-min's mean schedule length higher)",
          "Min-min superior", _min_over_max, Interval(lo=0), "3.3"),
    Claim("F4", "Academic: load balancing / SmartNet (Min-min) schedule length", "2.2 times",
          mean_ratio("academic", "lb_ratio", "OLB / Min-min"), Interval(1.65, 2.75, "x"), "5"),
    Claim("F5", "Academic: user directed / SmartNet schedule length", "2.8 times",
          mean_ratio("academic", "uda_ratio", "MET / Min-min"), Interval(2.1, 3.5, "x"), "6"),
    Claim("F6", "Production: the dynamic load balancer's schedule length grows with the noise", "a gradual rise",
          _dynamic_rise, Interval(lo=0), "7"),
    Claim("F7", "Production: SmartNet slightly better than the dynamic load balancer at the highest noise",
          "slightly better", _sn_vs_dynamic("production"), Interval(lo=0), "8"),
    Claim("F8", "SmartNet is no more sensitive to noise than the dynamic load balancer (rise, SmartNet minus LB)",
          "no more sensitive", _sensitivity, Interval(hi=0, unit="points"), "8, 9"),
)  # fmt: skip


# ------------------------------------------------------------------------------------- outputs


def write_csv(path: Path, rows: Sequence[Row]) -> None:
    """Full precision: the CSV holds what the summary states (an empty table writes no file)."""
    if rows:
        write_rows_csv(path, rows)


#: One colour and one marker per line of every figure of this module (no two lines share either).
_COLOURS = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#000000", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
]  # fmt: skip
_MARKERS = ["o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p", "d", "8", "H", "1"]


def line_style(index: int) -> dict[str, Any]:
    """The colour and marker of the ``index``-th line (distinct for up to 16 lines)."""
    return {"color": _COLOURS[index % len(_COLOURS)], "marker": _MARKERS[index % len(_MARKERS)]}


def noise_keys(noise: Rows) -> list[str]:
    """The noise figure's lines, in one fixed order (the same styles in both panels)."""
    keys = [*NOISE_MAPPERS, "dynamic-olb"]
    have = {str(r["mapper"]) for r in noise}
    return [k for k in keys if k in have]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(out_dir: Path, res: SmartnetResult, setup: Setup, seed: int) -> None:
    """Figures 2, 3, 5, 6 (ratio histograms), 4 (task times), 7-9 (noise) for ``setup``."""
    plt = _plt()
    ratios = [r for r in res.ratios if r["setup"] == setup.label]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for row, model in enumerate(MODELS):
        rs = [r for r in ratios if r["model"] == model]
        for col, (name, key) in enumerate((("load balancing (OLB)", "lb_ratio"), ("user directed (MET)", "uda_ratio"))):
            ax = axes[row][col]
            vals = np.array([float(r[key]) for r in rs])
            ax.hist(vals, bins=40, color=_COLOURS[col])
            mean = float(vals.mean()) if vals.size else float("nan")
            ax.axvline(mean, color="k", ls="--")
            ax.set_title(f"{model}: {name} / SmartNet ({SMARTNET_MAPPER[model]}); mean {mean:.3g} (dashed)", fontsize=8)
            ax.set_xlabel("schedule length ratio")
            ax.set_ylabel("problems")
    fig.tight_layout()
    fig.savefig(out_dir / "smartnet_ratios.png", dpi=110)
    plt.close(fig)
    # Figure 4: the academic task-time distribution (1,000 samples).
    rng = np.random.default_rng([seed, 9])
    t = 10.0 + rng.exponential(990.0, size=1000)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.hist(t, bins=40)
    ax.set_xlabel("task execution time")
    ax.set_ylabel("samples")
    ax.set_title("academic model: exponential, min 10, mean 1000", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_dir / "smartnet_task_times.png", dpi=110)
    plt.close(fig)
    noise = [r for r in res.noise if r["setup"] == setup.label]
    if not noise:
        return
    fig = noise_figure(noise)
    fig.savefig(out_dir / "smartnet_noise.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def noise_figure(noise: Rows) -> Any:
    """Figures 7-9 in two panels (production, academic): mean actual schedule length per noise
    level, one line per mapper (its own colour and marker, the same in both panels), the legend
    right of the panels (never over a line)."""
    plt = _plt()
    tab = noise_table(noise)
    keys = noise_keys(noise)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, model in zip(axes, MODELS, strict=True):
        for i, mp in enumerate(keys):
            sig = sorted(k[2] for k in tab if k[0] == model and k[1] == mp)
            if not sig:
                continue
            ls = "-" if mp in ("dynamic-olb", SMARTNET_MAPPER[model]) else ":"
            ax.plot(sig, [tab[(model, mp, s)] for s in sig], ls, ms=4, label=mp, **line_style(i))
        ax.set_yscale("log")
        ax.set_xlabel("noise sigma (fraction of the estimate)")
        ax.set_ylabel("mean actual schedule length")
        ax.set_title(f"{model} (SmartNet = {SMARTNET_MAPPER[model]})", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout(rect=(0.0, 0.0, 0.86, 1.0))
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(0.865, 0.5), fontsize=7, frameon=False)
    return fig


def plot_study(path: Path, rows: Rows, setups: Sequence[Setup], study: str) -> None:
    """The study's figure: F1 and F3 (and F4) per setup, the paper's value as a dashed line."""
    plt = _plt()
    panels = [c for c in CLAIMS if c.id in ("F1", "F3", "F4")]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4))
    paper = {"F1": 36.0, "F3": 0.0, "F4": 2.2}
    for ax, claim in zip(axes, panels, strict=True):
        vals = [claim.measure(rows, s.label) for s in setups]
        ys = [v.value if v is not None else np.nan for v in vals]
        x = np.arange(len(setups))
        for i, y in enumerate(ys):
            ax.bar(x[i], y, color=_COLOURS[i % len(_COLOURS)])
        ax.axhline(paper[claim.id], color="k", ls="--", lw=1)
        ax.set_xticks(x)
        ax.set_xticklabels([s.label.replace(" ", "\n") for s in setups], fontsize=6)
        unit = "%" if claim.tolerance.unit == "%" else "ratio"
        ax.set_title(f"{claim.id} ({unit}); dashed: the paper ({paper[claim.id]:g})", fontsize=8)
    fig.suptitle(f"smartnet1998 study '{study}'", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _verdict_cell(v: Verdict) -> str:
    return f"**{v.verdict}**" if v.verdict == FAILS else v.verdict


def summary_markdown(
    res: SmartnetResult,
    setups: Sequence[Setup],
    *,
    command: str,
    problems: int,
    noise_problems: int,
    seed: int,
    study: str | None = None,
) -> str:
    """The summary, generated from the claims and the run's rows (no sentence written by hand
    about the results)."""
    rows: list[Row] = [*res.ratios, *res.noise]
    labels = [s.label for s in setups]
    verdicts = evaluate(CLAIMS, rows, labels)
    n = counts(verdicts)
    title = "SmartNet 1998 (seed 002): which claims hold" + (f", study '{study}'" if study else "")
    lines = [
        f"# {title}",
        "",
        f"Command: `{command}`",
        "",
        f"{n[HOLDS]} verdicts hold, {n[FAILS]} do not, {n[NOT_RUN]} were not run "
        f"({len(CLAIMS)} claims x {len(labels)} setup(s)).",
        "",
        "## Setups",
        "",
        "| setup | tasks | machines | academic speeds | ties | ratio problems per model | noise problems per model |",
        "| --- | ---: | ---: | --- | --- | ---: | ---: |",
    ]
    for i, s in enumerate(setups):
        lines.append(
            f"| {s.label} | {s.tasks} | {s.machines} | {s.speed} | {s.tie} | {problems} "
            f"| {noise_problems if i == 0 else 0} |"
        )
    lines += [
        "",
        "## Claims per setup",
        "",
        "Ours: the measure named in the cell, from this run's rows. 'holds if ours is': this reproduction's",
        "reading of the paper's words, fixed before the runs.",
        "",
        *claims_tables(verdicts, labels),
    ]
    if len(labels) > 1:
        lines += ["## Robustness across the setups", "", *robustness_table(verdicts, labels), ""]
        lines += ["Our value of each claim per setup:", "", "| id | " + " | ".join(labels) + " |"]
        lines.append("| --- | " + " | ".join("---:" for _ in labels) + " |")
        by = {(v.claim.id, v.trace): v for v in verdicts}
        for c in CLAIMS:
            cells = [by[(c.id, lb)] for lb in labels]
            if all(v.verdict == NOT_RUN for v in cells):
                continue
            lines.append(
                f"| {c.id} | "
                + " | ".join(
                    f"{v.measure.value:.4g} ({_verdict_cell(v)})" if v.measure is not None else NOT_RUN for v in cells
                )
                + " |"
            )
        lines.append("")
    lines += ["## Mean schedule length of every greedy mapper (estimates, no noise)", ""]
    lines.append("| setup | mapper | " + " | ".join(MODELS) + " |")
    lines.append("| --- | --- |" + " ---: |" * len(MODELS))
    for s in setups:
        for key in GREEDY:
            means = [_mean(res.ratios, s.label, m, key) for m in MODELS]
            lines.append(f"| {s.label} | {key} | " + " | ".join("-" if c is None else f"{c:.6g}" for c in means) + " |")
    lines.append("")
    over_lb = []
    for s in setups:
        for m in MODELS:
            vals = [
                float(r["smartnet"]) / float(r["lower_bound"])
                for r in res.ratios
                if r["setup"] == s.label and r["model"] == m and "lower_bound" in r
            ]
            if vals:
                over_lb.append(f"{s.label} {m} {np.mean(vals):.4f}")
    lines.append("SmartNet / lower bound (mean): " + "; ".join(over_lb) + ".")
    if res.noise:
        tab = noise_table(res.noise)
        sigmas = sorted({k[2] for k in tab})
        lines += [
            "",
            f"## Noise (section 3.4), {noise_problems} problems per point, setup {setups[0].label}",
            "",
            "Mean actual schedule length; mappings from estimates, `dynamic-olb` assigns on actual times. "
            f"Search mappers capped at {NOISE_SEARCH_ITERATIONS} iterations.",
        ]
        for model in MODELS:
            keys = [k for k in noise_keys(res.noise) if (model, k, sigmas[0]) in tab]
            lines += ["", f"### {model}", "", "| mapper | " + " | ".join(f"sigma {x:g}" for x in sigmas) + " |"]
            lines.append("|---|" + "---:|" * len(sigmas))
            for mp in keys:
                lines.append(f"| {mp} | " + " | ".join(f"{tab[(model, mp, x)]:.6g}" for x in sigmas) + " |")
    files = "`smartnet_ratios.csv`, `smartnet_noise.csv`, `smartnet_ratios.png`, `smartnet_noise.png`, " + (
        "`smartnet_task_times.png`"
    )
    if study:
        files = f"`smartnet_ratios.csv`, `study_{study}.png`"
    lines += ["", f"Files: {files}. Seed {seed}.", "", "Setup as run: " + "; ".join(str(asdict(s)) for s in setups)]
    return "\n".join(lines) + "\n"


def write_outputs(
    out_dir: Path,
    res: SmartnetResult,
    setups: Sequence[Setup],
    *,
    command: str,
    problems: int,
    noise_problems: int,
    seed: int,
    study: str | None = None,
) -> None:
    """CSVs, figures and summary.md into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(out_dir / "smartnet_ratios.csv", res.ratios)
    write_csv(out_dir / "smartnet_noise.csv", res.noise)
    if study:
        plot_study(out_dir / f"study_{study}.png", [*res.ratios, *res.noise], setups, study)
    else:
        plot(out_dir, res, setups[0], seed)
    (out_dir / "summary.md").write_text(
        summary_markdown(
            res, setups, command=command, problems=problems, noise_problems=noise_problems, seed=seed, study=study
        )
    )
