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

from metasched.experiments.ernemann2002 import (
    GRID_CONFIGS,
    LOCAL,
    MULTISITE,
    REFERENCE,
    ROW_FIELDS,
    SHARING,
    SINGLE,
    Claim,
    break_evens,
)
from metasched.report.plots import pyplot

Key = tuple[str, str, str, int, float]


def write_rows(rows: Iterable[Mapping[str, Any]], path: Path) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(ROW_FIELDS))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in ROW_FIELDS})


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows written by :func:`write_rows`, with numbers as numbers."""
    ints = {"modification", "jobs", "split_jobs"}
    texts = {"workload", "config", "scenario"}
    with path.open(newline="") as fh:
        return [
            {k: (v if k in texts else int(v) if k in ints else float(v)) for k, v in row.items()}
            for row in csv.DictReader(fh)
        ]


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
        for k, c in enumerate(GRID_CONFIGS):
            xs, ys = _series(idx, workload, c, 2)
            if not xs:
                continue
            colour = f"C{k}"
            ax.plot(xs, [y / ref for y in ys], marker="o", color=colour, label=f"{c} multi-site")
            js = idx.get((workload, c, SHARING, 2, 0.0))
            if js is not None:
                ax.axhline(js / ref, color=colour, linestyle="--", linewidth=1, label=f"{c} job sharing")
        ax.axhline(1.0, color="black", linewidth=0.8, label="m512")
    ax.set_xlabel("multi-site overhead p (%)")
    ax.set_ylabel("AWRT / AWRT(m512)")
    ax.set_title(f"Configurations vs m512, workload {workload}, modification 2")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def figure6(idx: Mapping[Key, float], path: Path, workloads: Sequence[str], config: str = "m128") -> None:
    """Multi-site AWRT over the overhead relative to job sharing, one line per workload."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 4.4))
    for w in workloads:
        js = idx.get((w, config, SHARING, 2, 0.0))
        xs, ys = _series(idx, w, config, 2)
        if js and xs:
            ax.plot(xs, [y / js for y in ys], marker="o", label=w)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", label="job sharing")
    ax.set_xlabel("multi-site overhead p (%)")
    ax.set_ylabel("AWRT(multi-site) / AWRT(job sharing)")
    ax.set_title(f"Workloads, {config}, modification 2")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def figure7(idx: Mapping[Key, float], path: Path, workload: str, config: str = "m128") -> None:
    """Multi-site with wide jobs split into parts of the largest machine (mod 2) vs kept (mod 3)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 4.4))
    for mod, label in ((2, "wide jobs split (modification 2)"), (3, "wide jobs kept (modification 3)")):
        xs, ys = _series(idx, workload, config, mod)
        if xs:
            ax.plot(xs, ys, marker="o", label=f"multi-site, {label}")
    js = idx.get((workload, config, SHARING, 2, 0.0))
    if js is not None:
        ax.axhline(js, color="black", linestyle="--", linewidth=1, label="job sharing (modification 2)")
    ax.set_xlabel("multi-site overhead p (%)")
    ax.set_ylabel("AWRT (s)")
    ax.set_title(f"Wide jobs, {config}, workload {workload}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
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
    claims: Sequence[Claim],
    *,
    setup: Sequence[str],
    differences: Sequence[str],
    figures: Sequence[Path],
) -> str:
    """The markdown summary: setup, claims (hold or not, by how much), AWRT tables, break-evens."""
    idx = _index(rows)
    workloads = sorted({k[0] for k in idx})
    lines = ["# Seed 001 (Ernemann et al. 2002): grid job sharing and multi-site co-allocation", ""]
    lines += ["## Setup", "", *[f"- {s}" for s in setup], ""]
    lines += ["## Claims", "", "| claim | holds | measured |", "|---|---|---|"]
    for claim in claims:
        lines.append(f"| {claim.text} | {'yes' if claim.holds else 'NO'} | {claim.detail} |")
    lines += [""]
    lines += ["## Where we differ and why", "", *[f"- {d}" for d in differences], ""]
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
