"""The mapping experiments of seed 002 (SmartNet, 1998) and of Braun et al. (2001).

``smartnet1998``: 1,000 random problems for each of SmartNet's production and academic models;
ratios of the load-balancing (OLB) and user-directed (MET) schedule lengths to SmartNet's
(Max-min for production, Min-min for academic, as the paper chose), Figures 2-6; then the noise
study of section 3.4 (Figures 7-9): mappings computed on estimates, executed on actual times
(Normal(estimate, sigma x estimate) truncated positive), against the dynamic load balancer that
assigns on actual times.

``braun2001``: every mapper on the 12 Braun et al. 512 x 16 instances: makespan, time taken, and
the ratio to the LP lower bound.

Work is split into chunks run on ``workers`` processes; each chunk derives its generator from
``(seed, model, problem)`` so results do not depend on the number of workers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metasched.model.etc import EtcInstance, finish_times, lower_bound, makespan
from metasched.policy.mapping import REGISTRY, SEARCH_KEYS, Mapper
from metasched.policy.mapping.lp_rounding import lp_relaxation
from metasched.sim.metrics import write_rows_csv
from metasched.workload.etc import (
    BRAUN_NAMES,
    NasTable,
    actual_times,
    read_braun,
    smartnet_academic,
    smartnet_production,
)

Progress = Callable[[int], None]

PAPER_RATIOS = {
    ("production", "olb"): 36.0,
    ("production", "met"): 2.0,
    ("academic", "olb"): 2.2,
    ("academic", "met"): 2.8,
}
SMARTNET_MAPPER = {"production": "max-min", "academic": "min-min"}
GREEDY = ("olb", "met", "mct", "min-min", "max-min", "sufferage", "duplex")
NOISE_SEARCH_ITERATIONS = 50


def _instance(model: str, seed: int, problem: int, table: NasTable | None) -> EtcInstance:
    rng = np.random.default_rng([seed, 0 if model == "production" else 1, problem])
    if model == "production":
        assert table is not None
        return smartnet_production(rng, table)
    return smartnet_academic(rng)


def _mapper(key: str, *, iterations: int, seed: int, budget_s: float | None = None) -> Mapper:
    cls = REGISTRY[key]
    if key in SEARCH_KEYS:
        clock = time.perf_counter if budget_s is not None else None
        return cls(  # type: ignore[call-arg]
            max_iterations=iterations, seed=seed, time_budget_s=budget_s or 0.0, clock=clock
        )
    return cls()


# ----------------------------------------------------------------------------------- SmartNet 1998


def _ratio_chunk(args: tuple[str, int, Sequence[int], NasTable | None]) -> list[dict[str, Any]]:
    model, seed, problems, table = args
    rows = []
    for p in problems:
        inst = _instance(model, seed, p, table)
        row: dict[str, Any] = {"model": model, "problem": p}
        for key in GREEDY:
            row[key] = makespan(inst.etc, inst.ready, REGISTRY[key]().map(inst.etc, inst.ready))
        # A user picking "the fastest machine" has no reason to favour the lowest-numbered of several
        # equally fast copies (production machines are drawn with replacement): spread them at random.
        rng = np.random.default_rng([seed, 3, p])
        scores = rng.random(inst.etc.shape)
        scores[inst.etc != inst.etc.min(axis=1, keepdims=True)] = -1.0
        row["met-random-ties"] = makespan(inst.etc, inst.ready, scores.argmax(axis=1))
        sn = row[SMARTNET_MAPPER[model]]
        row["smartnet"] = sn
        row["lower_bound"] = lower_bound(inst.etc, inst.ready)
        row["lb_ratio"] = row["olb"] / sn
        row["uda_ratio"] = row["met"] / sn
        row["uda_random_ratio"] = row["met-random-ties"] / sn
        rows.append(row)
    return rows


def _noise_chunk(args: tuple[str, int, Sequence[int], NasTable | None, Sequence[float]]) -> list[dict[str, Any]]:
    model, seed, problems, table, sigmas = args
    rows = []
    keys = [k for k in REGISTRY if k != "lp-rounding"]
    for p in problems:
        inst = _instance(model, seed, p, table)
        plans = {k: _mapper(k, iterations=NOISE_SEARCH_ITERATIONS, seed=p).map(inst.etc, inst.ready) for k in keys}
        for s_i, sigma in enumerate(sigmas):
            rng = np.random.default_rng([seed, 2, p, s_i])
            actual = actual_times(rng, inst.etc, sigma)
            for k, a in plans.items():
                rows.append(
                    {
                        "model": model,
                        "sigma": sigma,
                        "problem": p,
                        "mapper": k,
                        "makespan": makespan(actual, inst.ready, a),
                    }
                )
            # The dynamic load balancer sees actual times: OLB run on them.
            dyn = REGISTRY["olb"]().map(actual, inst.ready)
            rows.append(
                {
                    "model": model,
                    "sigma": sigma,
                    "problem": p,
                    "mapper": "dynamic-olb",
                    "makespan": float(finish_times(actual, inst.ready, dyn).max()),
                }
            )
    return rows


def _chunks(n: int, size: int) -> list[range]:
    return [range(i, min(i + size, n)) for i in range(0, n, size)]


def _run(
    fn: Callable[[Any], list[dict[str, Any]]], jobs: list[Any], workers: int, progress: Progress | None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if workers <= 1:
        for job in jobs:
            out.extend(fn(job))
            if progress:
                progress(1)
        return out
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for rows in pool.map(fn, jobs):
            out.extend(rows)
            if progress:
                progress(1)
    return out


@dataclass
class SmartnetResult:
    ratios: list[dict[str, Any]]
    noise: list[dict[str, Any]]
    summary: dict[str, float]


def smartnet1998_jobs(
    table: NasTable, *, problems: int, noise_problems: int, sigmas: Sequence[float], seed: int, chunk: int = 25
) -> tuple[list[Any], list[Any]]:
    ratio_jobs = [
        (m, seed, r, table if m == "production" else None) for m in SMARTNET_MAPPER for r in _chunks(problems, chunk)
    ]
    noise_jobs = [
        (m, seed, r, table if m == "production" else None, tuple(sigmas))
        for m in SMARTNET_MAPPER
        for r in _chunks(noise_problems, max(1, chunk // 5))
    ]
    return ratio_jobs, noise_jobs


def smartnet1998(
    table: NasTable,
    out_dir: Path,
    *,
    problems: int = 1000,
    noise_problems: int = 100,
    sigmas: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5),
    seed: int = 0,
    workers: int = 2,
    progress: Progress | None = None,
) -> SmartnetResult:
    """Run the SmartNet study; write CSV, PNG and ``summary.md`` into ``out_dir``."""
    if problems < 1 or noise_problems < 0:
        raise ValueError("problems must be >= 1 and noise_problems >= 0")
    out_dir.mkdir(parents=True, exist_ok=True)
    ratio_jobs, noise_jobs = smartnet1998_jobs(
        table, problems=problems, noise_problems=noise_problems, sigmas=sigmas, seed=seed
    )
    ratios = _run(_ratio_chunk, ratio_jobs, workers, progress)
    noise = _run(_noise_chunk, noise_jobs, workers, progress) if noise_problems else []
    ratios.sort(key=lambda r: (r["model"], r["problem"]))
    summary: dict[str, float] = {}
    for model in SMARTNET_MAPPER:
        rows = [r for r in ratios if r["model"] == model]
        for name, col in (("olb", "lb_ratio"), ("met", "uda_ratio"), ("met-random-ties", "uda_random_ratio")):
            vals = np.array([r[col] for r in rows])
            summary[f"{model}.{name}.mean"] = float(vals.mean())
            summary[f"{model}.{name}.median"] = float(np.median(vals))
        for key in GREEDY:
            summary[f"{model}.{key}.mean_makespan"] = float(np.mean([r[key] for r in rows]))
        summary[f"{model}.smartnet_over_lb.mean"] = float(np.mean([r["smartnet"] / r["lower_bound"] for r in rows]))
    _write_csv(out_dir / "smartnet_ratios.csv", ratios)
    if noise:
        _write_csv(out_dir / "smartnet_noise.csv", noise)
    _plot_smartnet(out_dir, ratios, noise, seed)
    _write_smartnet_summary(out_dir / "summary.md", summary, noise, problems, noise_problems, seed)
    return SmartnetResult(ratios, noise, summary)


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if rows:  # an empty table writes no file
        write_rows_csv(path, rows)  # full precision: the CSV holds what the summary states


def noise_table(noise: list[dict[str, Any]]) -> dict[tuple[str, str, float], float]:
    """Mean makespan per (model, mapper, sigma)."""
    acc: dict[tuple[str, str, float], list[float]] = {}
    for r in noise:
        acc.setdefault((r["model"], r["mapper"], r["sigma"]), []).append(r["makespan"])
    return {k: float(np.mean(v)) for k, v in acc.items()}


def _plot_smartnet(out_dir: Path, ratios: list[dict[str, Any]], noise: list[dict[str, Any]], seed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for row, model in enumerate(SMARTNET_MAPPER):
        rs = [r for r in ratios if r["model"] == model]
        for col, (name, key) in enumerate((("load balancing (OLB)", "lb_ratio"), ("user directed (MET)", "uda_ratio"))):
            ax = axes[row][col]
            vals = np.array([r[key] for r in rs])
            ax.hist(vals, bins=40, color="tab:blue" if col == 0 else "tab:orange")
            ax.axvline(vals.mean(), color="k", ls="--", label=f"mean {vals.mean():.2f}")
            ax.set_title(f"{model}: {name} / SmartNet ({SMARTNET_MAPPER[model]})", fontsize=9)
            ax.set_xlabel("schedule length ratio")
            ax.set_ylabel("problems")
            ax.legend(fontsize=8)
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
    if not noise:
        return
    tab = noise_table(noise)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, model in zip(axes, SMARTNET_MAPPER, strict=True):
        mappers = sorted({k[1] for k in tab if k[0] == model})
        for mp in mappers:
            sig = sorted(k[2] for k in tab if k[0] == model and k[1] == mp)
            ys = [tab[(model, mp, s)] for s in sig]
            style = "-" if mp in ("dynamic-olb", SMARTNET_MAPPER[model]) else ":"
            ax.plot(sig, ys, style, marker="o", ms=3, label=mp)
        ax.set_yscale("log")
        ax.set_xlabel("noise sigma (fraction of the estimate)")
        ax.set_ylabel("mean actual schedule length")
        ax.set_title(f"{model} (SmartNet = {SMARTNET_MAPPER[model]})", fontsize=9)
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out_dir / "smartnet_noise.png", dpi=110)
    plt.close(fig)


def _write_smartnet_summary(
    path: Path, s: dict[str, float], noise: list[dict[str, Any]], problems: int, noise_problems: int, seed: int
) -> None:
    lines = [
        "# SmartNet 1998 (seed 002), reproduced",
        "",
        f"{problems} random problems per model (100 tasks x 20 machines), seed {seed}.",
        "SmartNet = Max-min (production) and Min-min (academic), as the paper chose.",
        "",
        "| model | ratio | paper mean | our mean | our median |",
        "|---|---|---:|---:|---:|",
    ]
    for model in SMARTNET_MAPPER:
        for name, label in (
            ("olb", "load balancing / SmartNet"),
            ("met", "user directed / SmartNet"),
            ("met-random-ties", "user directed, random among equally fast / SmartNet"),
        ):
            paper = PAPER_RATIOS[(model, "met" if name == "met-random-ties" else name)]
            lines.append(
                f"| {model} | {label} | {paper:.1f} | {s[f'{model}.{name}.mean']:.2f} "
                f"| {s[f'{model}.{name}.median']:.2f} |"
            )
    lines += ["", "Mean makespan of every greedy mapper (estimates, no noise):", ""]
    lines.append("| mapper | production | academic |")
    lines.append("|---|---:|---:|")
    for key in GREEDY:
        lines.append(
            f"| {key} | {s[f'production.{key}.mean_makespan']:.2f} | {s[f'academic.{key}.mean_makespan']:.1f} |"
        )
    lines.append(
        f"\nSmartNet / lower bound: production {s['production.smartnet_over_lb.mean']:.3f}, "
        f"academic {s['academic.smartnet_over_lb.mean']:.3f}."
    )
    if noise:
        tab = noise_table(noise)
        sigmas = sorted({k[2] for k in tab})
        lines += [
            "",
            f"## Noise (section 3.4), {noise_problems} problems per point",
            "",
            "Mean actual makespan; mappings from estimates, `dynamic-olb` assigns on actual times. "
            f"Search mappers capped at {NOISE_SEARCH_ITERATIONS} iterations.",
        ]
        for model in SMARTNET_MAPPER:
            mappers = sorted({k[1] for k in tab if k[0] == model})
            lines += ["", f"### {model}", "", "| mapper | " + " | ".join(f"sigma {x:g}" for x in sigmas) + " |"]
            lines.append("|---|" + "---:|" * len(sigmas))
            for mp in mappers:
                lines.append(f"| {mp} | " + " | ".join(f"{tab[(model, mp, x)]:.4g}" for x in sigmas) + " |")
            sn, dyn = SMARTNET_MAPPER[model], "dynamic-olb"
            lines.append(
                "\nDynamic LB / SmartNet: "
                + ", ".join(f"sigma {x:g}: {tab[(model, dyn, x)] / tab[(model, sn, x)]:.2f}" for x in sigmas)
            )
    lines += [
        "",
        "Files: `smartnet_ratios.csv`, `smartnet_noise.csv`, `smartnet_ratios.png`, `smartnet_noise.png`, "
        "`smartnet_task_times.png`.",
    ]
    path.write_text("\n".join(lines) + "\n")


# ----------------------------------------------------------------------------------- Braun 2001


def _braun_job(args: tuple[Path, str, float, int]) -> list[dict[str, Any]]:
    path, key, budget_s, seed = args
    inst = read_braun(path)
    mapper = _mapper(key, iterations=10**9, seed=seed, budget_s=budget_s)
    t0 = time.perf_counter()
    a = mapper.map(inst.etc, inst.ready)
    dt = time.perf_counter() - t0
    return [{"instance": inst.name, "mapper": key, "makespan": makespan(inst.etc, inst.ready, a), "seconds": dt}]


def braun_best(*, budget_s: float, seed: int = 0) -> Mapper:
    """The best search configuration: ILS from the LP rounding (see BENCHMARKS.md)."""
    from metasched.policy.mapping import IteratedLocalSearch, LpRounding

    return IteratedLocalSearch(
        time_budget_s=budget_s, clock=time.perf_counter, seed=seed, max_iterations=10**9, start=LpRounding()
    )


def _braun_best_job(args: tuple[Path, float, int]) -> list[dict[str, Any]]:
    path, budget_s, seed = args
    inst = read_braun(path)
    t0 = time.perf_counter()
    a = braun_best(budget_s=budget_s, seed=seed).map(inst.etc, inst.ready)
    dt = time.perf_counter() - t0
    return [{"instance": inst.name, "mapper": "ils+lp", "makespan": makespan(inst.etc, inst.ready, a), "seconds": dt}]


def braun2001(
    etc_dir: Path,
    out_dir: Path,
    *,
    budget_s: float = 5.0,
    seed: int = 0,
    workers: int = 2,
    instances: Sequence[str] = BRAUN_NAMES,
    mappers: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Every mapper on the Braun instances; search mappers get ``budget_s`` seconds each."""
    out_dir.mkdir(parents=True, exist_ok=True)
    keys = list(mappers) if mappers is not None else list(REGISTRY)
    unknown = [k for k in keys if k not in REGISTRY and k != "ils+lp"]
    if unknown:
        raise ValueError(f"unknown mapper(s) {unknown}; known: {', '.join(REGISTRY)}, ils+lp")
    paths = []
    for name in instances:
        p = etc_dir / f"{name}.gz"
        if not p.is_file():
            p = etc_dir / name
        if not p.is_file():
            raise FileNotFoundError(f"Braun instance {name} not found in {etc_dir}")
        paths.append(p)
    jobs: list[Any] = [(p, k, budget_s, seed) for p in paths for k in keys if k != "ils+lp"]
    rows = _run(_braun_job, jobs, workers, progress)
    if "ils+lp" in keys:
        rows += _run(_braun_best_job, [(p, budget_s, seed) for p in paths], workers, progress)
    bounds = {}
    for p in paths:
        inst = read_braun(p)
        bounds[inst.name] = lp_relaxation(inst.etc, inst.ready)[0]
    for r in rows:
        r["lp_bound"] = bounds[r["instance"]]
        r["over_lp"] = r["makespan"] / bounds[r["instance"]]
    rows.sort(key=lambda r: (r["instance"], keys.index(r["mapper"])))
    _write_csv(out_dir / "braun_makespans.csv", rows)
    _plot_braun(out_dir, rows, keys)
    _write_braun_summary(out_dir / "summary.md", rows, keys, budget_s)
    return rows


def _plot_braun(out_dir: Path, rows: list[dict[str, Any]], keys: Sequence[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({r["instance"] for r in rows})
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.8 / max(1, len(keys))
    for i, k in enumerate(keys):
        vals = [next((r["over_lp"] for r in rows if r["instance"] == n and r["mapper"] == k), np.nan) for n in names]
        ax.bar(np.arange(len(names)) + i * width, vals, width, label=k)
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2)
    ax.set_xticklabels(names, rotation=30, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("makespan / LP lower bound")
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(out_dir / "braun_makespans.png", dpi=110)
    plt.close(fig)


def _write_braun_summary(path: Path, rows: list[dict[str, Any]], keys: Sequence[str], budget_s: float) -> None:
    names = sorted({r["instance"] for r in rows})
    by = {(r["instance"], r["mapper"]): r for r in rows}
    lines = [
        "# Braun et al. (2001) instances, every mapper",
        "",
        f"Makespan (seconds of the schedule) per instance; search mappers ran {budget_s:g} s each "
        "(wall clock on a shared machine). `LP` = LP-relaxation lower bound.",
        "",
        "| instance | LP | " + " | ".join(keys) + " |",
        "|---|---:|" + "---:|" * len(keys),
    ]
    for n in names:
        lp = next(r["lp_bound"] for r in rows if r["instance"] == n)
        lines.append(f"| {n} | {lp:.1f} | " + " | ".join(f"{by[(n, k)]['makespan']:.1f}" for k in keys) + " |")
    lines += ["", "Ratio to the LP bound (1.000 = provably optimal):", ""]
    lines.append("| instance | " + " | ".join(keys) + " |")
    lines.append("|---|" + "---:|" * len(keys))
    for n in names:
        lines.append(f"| {n} | " + " | ".join(f"{by[(n, k)]['over_lp']:.4f}" for k in keys) + " |")
    lines += ["", "Seconds taken:", "", "| instance | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for n in names:
        lines.append(f"| {n} | " + " | ".join(f"{by[(n, k)]['seconds']:.3f}" for k in keys) + " |")
    lines += ["", "Files: `braun_makespans.csv`, `braun_makespans.png`."]
    path.write_text("\n".join(lines) + "\n")
