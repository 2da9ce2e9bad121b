"""Figures and summary of the seed 001 sweep (:mod:`metasched.experiments.ernemann2002`).

Figures follow seed 001's Figures 4-7: AWRT of every scenario on m128 (4), multi-site AWRT over the
overhead per configuration relative to m512 (5), per workload relative to job sharing (6), and
multi-site with wide jobs split into parts of 128 vs kept whole (7).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from metasched.experiments.claims import FAILS, HOLDS, NOT_RUN, claims_tables, counts, evaluate, robustness_table
from metasched.experiments.ernemann2002 import (
    CLAIMS,
    GRID_CONFIGS,
    LOCAL,
    MULTISITE,
    REFERENCE,
    ROW_FIELDS,
    SHARING,
    SINGLE,
    break_evens,
    workload_traces,
)
from metasched.report.plots import pyplot
from metasched.sim.metrics import read_rows_csv

Key = tuple[str, str, str, int, float]


def write_rows(rows: Iterable[Mapping[str, Any]], path: Path) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(ROW_FIELDS))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in ROW_FIELDS})


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows written by :func:`write_rows`, with numbers as numbers (``int`` where written as one)."""
    return read_rows_csv(path, ("workload", "config", "scenario"))


def _index(rows: Iterable[Mapping[str, Any]]) -> dict[Key, float]:
    return {
        (r["workload"], r["config"], r["scenario"], int(r["modification"]), round(float(r["overhead"]), 4)): float(
            r["awrt"]
        )
        for r in rows
    }


def _series(idx: Mapping[Key, float], w: str, c: str, mod: int) -> tuple[list[float], list[float]]:
    points = sorted((p, a) for (w2, c2, s, m, p), a in idx.items() if (w2, c2, s, m) == (w, c, MULTISITE, mod))
    return [100 * p for p, _ in points], [a for _, a in points]


_COLOURS = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#000000", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
)  # fmt: skip
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p", "d", "8", "H", "1")


def line_style(i: int) -> dict[str, Any]:
    """The colour and marker of a figure's ``i``-th line: no two lines of a figure share either."""
    return {"color": _COLOURS[i % len(_COLOURS)], "marker": _MARKERS[i % len(_MARKERS)]}


def _legend_outside(ax: Any) -> None:
    """The legend right of the axes, never over the data (none without labelled lines)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _pick(options: Sequence[str], preferred: str) -> str:
    return preferred if preferred in options else options[0]


def figure4(idx: Mapping[Key, float], path: Path, workload: str, config: str = "m128") -> None:
    """AWRT of local, job sharing, multi-site (p = 0..40%) and m512 on one configuration."""
    labels, values, colours = [], [], []
    for label, key, colour in (
        ("local", (workload, config, LOCAL, 1, 0.0), "tab:red"),
        ("job sharing", (workload, config, SHARING, 2, 0.0), "tab:blue"),
    ):
        if key in idx:
            labels.append(label)
            values.append(idx[key])
            colours.append(colour)
    xs, ys = _series(idx, workload, config, 2)
    for p, a in zip(xs, ys, strict=True):
        labels.append(f"multi-site {p:.0f}%")
        values.append(a)
        colours.append("tab:green")
    for label, key, colour in (
        ("m512, same jobs", (workload, config, SINGLE, 2, 0.0), "silver"),
        ("m512, unsplit", (workload, REFERENCE, SINGLE, 2, 0.0), "tab:gray"),
    ):
        if key in idx:
            labels.append(label)
            values.append(idx[key])
            colours.append(colour)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.bar(range(len(values)), values, color=colours)
    ax.set_xticks(range(len(values)), labels, rotation=45, ha="right")
    ax.set_ylabel("AWRT (s)")
    ax.set_title(f"AWRT, {config}, workload {workload}, modification 2 (local: modification 1)")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def figure5(idx: Mapping[Key, float], path: Path, workload: str) -> None:
    """Multi-site AWRT over the overhead, per configuration, relative to m512 (job sharing dashed)."""
    ref = idx.get((workload, REFERENCE, SINGLE, 2, 0.0))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.6, 4.4))
    if ref:
        line = 0
        for c in GRID_CONFIGS:
            xs, ys = _series(idx, workload, c, 2)
            if not xs:
                continue
            ax.plot(xs, [y / ref for y in ys], label=f"{c} multi-site", **line_style(line))
            js = idx.get((workload, c, SHARING, 2, 0.0))
            if js is not None:
                ax.plot(xs, [js / ref] * len(xs), linestyle="--", linewidth=1, label=f"{c} job sharing",
                        **line_style(line + 1))  # fmt: skip
            line += 2
        ax.axhline(1.0, color="black", linewidth=0.8, label="m512")
    ax.set_xlabel("multi-site overhead p (%)")
    ax.set_ylabel("AWRT / AWRT(m512)")
    ax.set_title(f"Configurations vs m512, workload {workload}, modification 2")
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def figure6(idx: Mapping[Key, float], path: Path, workloads: Sequence[str], config: str = "m128") -> None:
    """Multi-site AWRT over the overhead relative to job sharing, one line per workload."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.6, 4.4))
    for i, w in enumerate(workloads):
        js = idx.get((w, config, SHARING, 2, 0.0))
        xs, ys = _series(idx, w, config, 2)
        if js and xs:
            ax.plot(xs, [y / js for y in ys], label=w, **line_style(i))
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", label="job sharing")
    ax.set_xlabel("multi-site overhead p (%)")
    ax.set_ylabel("AWRT(multi-site) / AWRT(job sharing)")
    ax.set_title(f"Workloads, {config}, modification 2")
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def figure7(idx: Mapping[Key, float], path: Path, workload: str, config: str = "m128") -> None:
    """Multi-site with wide jobs split into parts of the largest machine (mod 2) vs kept (mod 3)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.6, 4.4))
    for i, (mod, label) in enumerate(((2, "wide jobs split (modification 2)"), (3, "wide jobs kept (modification 3)"))):
        xs, ys = _series(idx, workload, config, mod)
        if xs:
            ax.plot(xs, ys, label=f"multi-site, {label}", **line_style(i))
    js = idx.get((workload, config, SHARING, 2, 0.0))
    if js is not None:
        ax.axhline(js, color="black", linestyle="--", linewidth=1, label="job sharing (modification 2)")
    ax.set_xlabel("multi-site overhead p (%)")
    ax.set_ylabel("AWRT (s)")
    ax.set_title(f"Wide jobs, {config}, workload {workload}")
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_figures(rows: Sequence[Mapping[str, Any]], out: Path, workload: str = "ctcsyn") -> list[Path]:
    """Figures 4-7 as PNG files in ``out``; returns their paths."""
    idx = _index(rows)
    workloads = sorted({k[0] for k in idx})
    w = _pick(workloads, workload)
    configs = sorted({k[1] for k in idx})
    c = _pick(configs, "m128")
    paths = [out / "fig4_awrt_m128.png", out / "fig5_configs.png", out / "fig6_workloads.png", out / "fig7_wide.png"]
    figure4(idx, paths[0], w, c)
    figure5(idx, paths[1], w)
    figure6(idx, paths[2], workloads, c)
    figure7(idx, paths[3], w, c)
    return paths


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _pct(x: float) -> str:
    return "never (>40%)" if x == math.inf else ("n/a" if math.isnan(x) else f"{100 * x:.1f}%")


def summary_markdown(
    rows: Sequence[Mapping[str, Any]],
    *,
    command: str,
    setup: Sequence[str],
    figures: Sequence[Path],
) -> str:
    """The markdown summary, generated from ``rows``: the claims' verdicts per workload and across
    the workloads (:data:`~metasched.experiments.ernemann2002.CLAIMS`), then the AWRT and
    break-even tables; ``setup`` states the inputs (no result)."""
    idx = _index(rows)
    workloads = workload_traces(rows)
    verdicts = evaluate(CLAIMS, rows, workloads)
    n = counts(verdicts)
    lines = ["# Ernemann et al. 2002 (seed 001): which claims hold", "", f"Command: `{command}`", ""]
    lines += [
        f"{n[HOLDS]} verdicts hold, {n[FAILS]} do not, {n[NOT_RUN]} were not run "
        f"({len(CLAIMS)} claims x {len(workloads)} workload(s)).",
        "",
    ]
    lines += ["## Setup", "", *[f"- {s}" for s in setup], ""]
    lines += ["## Robustness across the workloads", "", *robustness_table(verdicts, workloads), ""]
    lines += [
        "## Claims per workload",
        "",
        "Ours: the measure named in the cell, from this run's rows. 'holds if ours is': this reproduction's",
        "reading of the paper's words, fixed before the runs.",
        "",
        *claims_tables(verdicts, workloads),
    ]
    lines += ["## AWRT (s)", ""]
    overheads = sorted({k[4] for k in idx if k[2] == MULTISITE})
    shown = [p for p in overheads if p in (0.0, 0.1, 0.25, 0.4)] or overheads
    header = ["workload", "config", "one 512 machine (2)", "local (1)", "sharing (1)", "sharing (2)"]
    header += [f"multi-site {100 * p:.0f}% ({mod})" for mod in (2, 3) for p in shown]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    present = {k[1] for k in idx}
    known = (*GRID_CONFIGS, REFERENCE)
    configs = [c for c in GRID_CONFIGS if c in present] + sorted(present - set(known))
    configs += [REFERENCE] if REFERENCE in present else []
    for w in workloads:
        for c in configs:
            if c == REFERENCE:
                cells = [w, c, _fmt(idx.get((w, c, SINGLE, 2, 0.0)))] + ["-"] * (len(header) - 3)
            elif not any(k[:2] == (w, c) and k[2] != SINGLE for k in idx):
                continue
            else:
                cells = [
                    w,
                    c,
                    _fmt(idx.get((w, c, SINGLE, 2, 0.0))),
                    _fmt(idx.get((w, c, LOCAL, 1, 0.0))),
                    _fmt(idx.get((w, c, SHARING, 1, 0.0))),
                    _fmt(idx.get((w, c, SHARING, 2, 0.0))),
                ]
                cells += [_fmt(idx.get((w, c, MULTISITE, mod, p))) for mod in (2, 3) for p in shown]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Break-even overhead (multi-site AWRT reaches job sharing's; modification 2)", ""]
    even = break_evens([dict(r) for r in rows], 2)
    grid_configs = [c for c in GRID_CONFIGS if any(k[1] == c for k in even)]
    lines += ["| workload | " + " | ".join(grid_configs) + " |", "|---|" + "---|" * len(grid_configs)]
    for w in workloads:
        lines.append(f"| {w} | " + " | ".join(_pct(even.get((w, c), math.nan)) for c in grid_configs) + " |")
    lines += ["", "## Figures", "", *[f"![{p.stem}]({p.name})" for p in figures], ""]
    return "\n".join(lines)


def write_study(name: str, rows: Sequence[Mapping[str, Any]], out: Path, command: str) -> list[Path]:
    """Study ``name`` (:data:`~metasched.experiments.ernemann2002.STUDIES`) from the sweep's rows:
    ``break_even.csv`` (full precision), ``break_even.png`` and ``summary.md`` in ``out``."""
    from metasched.experiments.ernemann2002 import STUDIES, break_even_rows

    out.mkdir(parents=True, exist_ok=True)
    table = break_even_rows(rows)
    csv_path, png, md = out / "break_even.csv", out / "break_even.png", out / "summary.md"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["workload", "config", "break_even", "awrt_sharing",
                                                "awrt_multisite_25", "ratio_25"])  # fmt: skip
        writer.writeheader()
        writer.writerows(table)
    configs = [c for c in GRID_CONFIGS if any(r["config"] == c for r in table)]
    workloads = list(dict.fromkeys(r["workload"] for r in table))
    top = max([100 * r["break_even"] for r in table if math.isfinite(r["break_even"])] or [40.0])
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.6, 4.4))
    for i, w in enumerate(workloads):
        pts = [(configs.index(r["config"]), r["break_even"]) for r in table if r["workload"] == w]
        ax.plot([x for x, _ in pts], [100 * min(y, 10.0) if math.isfinite(y) else top * 1.1 for _, y in pts],
                label=w, **line_style(i))  # fmt: skip
    ax.axhline(25.0, color="black", linestyle=":", linewidth=1, label="paper: about 25% (m128)")
    ax.set_xticks(range(len(configs)), configs)
    ax.set_ylabel("break-even overhead p (%)")
    ax.set_title(f"Break-even of multi-site vs job sharing (modification 2); 'never' drawn at {top * 1.1:.0f}%")
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    lines = [
        f"# Ernemann et al. 2002: study `{name}`",
        "",
        f"Command: `{command}`",
        "",
        f"Question: {STUDIES[name]}.",
        "",
    ]
    lines += ["| workload | " + " | ".join(configs) + " |", "|---|" + "---|" * len(configs)]
    for w in workloads:
        cells = {r["config"]: r for r in table if r["workload"] == w}
        lines.append(
            f"| {w} | "
            + " | ".join(
                f"{_pct(cells[c]['break_even'])} (AWRT(25%)/sharing {cells[c]['ratio_25']:.3f})" if c in cells else "-"
                for c in configs
            )
            + " |"
        )
    lines += ["", f"![break-even]({png.name})", ""]
    md.write_text("\n".join(lines))
    return [csv_path, png, md]
