"""Files of a :class:`~metasched.sim.gridsim.GridSimResult`: ``jobs.csv``, ``summary.json``,
``jobs_batsim.csv``, ``gantt.png`` per policy, and ``compare.csv`` / ``compare.png`` across policies.

Processor numbering: the sites' processors are numbered one after the other in platform order
(site 0 holds ``0 .. P0-1``, site 1 ``P0 .. P0+P1-1``, ...), the one resource space Batsim and
evalys know. :func:`allocate_processors` assigns each job concrete processors by a first-free
sweep: jobs in start order (ends released first at equal instants, jobs of no duration first
among those starting together), each taking the lowest-numbered
free processors of its site(s). Invariant (hypothesis test): no processor is held by two jobs at
any instant, and a job gets exactly as many processors as it has at each site.
"""

from __future__ import annotations

import csv
import heapq
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metasched.sim.gridsim import GridSimResult

COMPARE_METRICS: tuple[str, ...] = (
    "jobs",
    "awrt",
    "mean_wait",
    "p95_wait",
    "mean_bounded_slowdown",
    "p95_bounded_slowdown",
    "utilization",
    "effective_utilization",
    "messages",
)


def allocate_processors(result: GridSimResult) -> list[list[int]]:
    """Processor ids (global numbering, sorted) of each job, aligned with the result's rows."""
    offsets = np.concatenate([[0], np.cumsum([s.procs for s in result.platform.sites])]).astype(int).tolist()
    # per site: a heap of free processor ids; releases are applied before starts at the same instant
    free: list[list[int]] = [list(range(offsets[s], offsets[s + 1])) for s in range(len(result.platform.sites))]
    # at one instant, jobs of no duration first: they end at once and free their processors for the
    # others starting then (the simulator may have started them on processors a later start took)
    t_start, t_end = result.start_time, result.end_time
    order = sorted(range(len(result)), key=lambda i: (float(t_start[i]), bool(t_end[i] > t_start[i]), i))
    ends: list[tuple[float, int]] = []
    held: dict[int, list[tuple[int, list[int]]]] = {}
    out: list[list[int]] = [[] for _ in range(len(result))]
    for i in order:
        start = float(result.start_time[i])
        while ends and ends[0][0] <= start:
            _, j = heapq.heappop(ends)
            for site, ids in held.pop(j):
                for pid in ids:
                    heapq.heappush(free[site], pid)
        taken: list[tuple[int, list[int]]] = []
        for site, n in result.parts[i]:
            if len(free[site]) < n:
                raise ValueError(
                    f"job {int(result.job_id[i])}: site {site} has {len(free[site])} free processors, needs {n}"
                )
            ids = [heapq.heappop(free[site]) for _ in range(n)]
            taken.append((site, ids))
        held[i] = taken
        heapq.heappush(ends, (float(result.end_time[i]), i))
        out[i] = sorted(pid for _, ids in taken for pid in ids)
    return out


def intervals(ids: Sequence[int]) -> str:
    """Batsim's interval set text: ``[0, 1, 2, 5]`` -> ``"0-2 5"``."""
    runs: list[str] = []
    start = prev = None
    for pid in ids:
        if start is None:
            start = prev = pid
        elif pid == prev + 1:  # type: ignore[operator]
            prev = pid
        else:
            runs.append(f"{start}-{prev}" if start != prev else f"{start}")
            start = prev = pid
    if start is not None:
        runs.append(f"{start}-{prev}" if start != prev else f"{start}")
    return " ".join(runs)


def _write_table(path: Path, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> list[Path]:
    """``path`` as CSV, and a ``.parquet`` beside it when pyarrow is installed; the files written."""
    names = list(columns)
    rows = zip(*(np.asarray(columns[n]).tolist() for n in names), strict=True)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(names)
        writer.writerows(rows)
    written = [path]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return written
    table = pa.table({n: np.asarray(columns[n]).tolist() for n in names})
    pq.write_table(table, path.with_suffix(".parquet"))
    written.append(path.with_suffix(".parquet"))
    return written


def batsim_columns(result: GridSimResult, alloc: list[list[int]] | None = None) -> dict[str, list[Any]]:
    """The columns of ``jobs_batsim.csv`` (Batsim's ``_jobs.csv``, as evalys reads it)."""
    alloc = allocate_processors(result) if alloc is None else alloc
    submit, start, end = result.submit_time, result.start_time, result.end_time
    return {
        "job_id": result.job_id.tolist(),
        "workload_name": ["w0"] * len(result),
        "profile": ["delay"] * len(result),
        "submission_time": submit.tolist(),
        "requested_number_of_resources": result.procs.tolist(),
        "requested_time": (end - start).tolist(),
        "success": [1] * len(result),
        "final_state": ["COMPLETED_SUCCESSFULLY"] * len(result),
        "starting_time": start.tolist(),
        "execution_time": (end - start).tolist(),
        "finish_time": end.tolist(),
        "waiting_time": (start - submit).tolist(),
        "turnaround_time": (end - submit).tolist(),
        "stretch": ((end - submit) / np.maximum(end - start, 1e-9)).tolist(),
        "allocated_resources": [intervals(a) for a in alloc],
        "consumed_energy": [-1] * len(result),
        "metadata": [""] * len(result),
    }


def write_result(result: GridSimResult, out: Path, *, gantt: bool = True) -> list[Path]:
    """Every per-policy file of ``result`` into ``out`` (created); the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = _write_table(out / "jobs.csv", result.columns())
    alloc = allocate_processors(result)
    written += _write_table(out / "jobs_batsim.csv", batsim_columns(result, alloc))
    path = out / "summary.json"
    path.write_text(json.dumps(_finite(result.summary), indent=2) + "\n")
    written.append(path)
    if gantt:
        written.append(plot_gantt(result, out / "gantt.png", alloc))
    return written


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def gantt_rectangles(
    result: GridSimResult, alloc: list[list[int]], t0: float = 0.0
) -> list[list[tuple[float, float, int, int, float]]]:
    """Per site, ``(start h, end h, first processor, last processor + 1, wait s)`` of every run of
    consecutive processors a job holds there (processors numbered within the site, hours since ``t0``)."""
    sites = result.platform.sites
    offsets = np.concatenate([[0], np.cumsum([s.procs for s in sites])]).astype(int).tolist()
    site_of = (np.searchsorted(offsets, np.arange(offsets[-1]), side="right") - 1).tolist()
    starts = ((result.start_time - t0) / 3600.0).tolist()
    ends = ((result.end_time - t0) / 3600.0).tolist()
    waits = result.wait.tolist()
    out: list[list[tuple[float, float, int, int, float]]] = [[] for _ in sites]
    for i, ids in enumerate(alloc):
        if not ids:
            continue
        run_start = prev = ids[0]
        for pid in [*ids[1:], None]:
            if pid is not None and pid == prev + 1 and site_of[pid] == site_of[prev]:
                prev = pid
                continue
            s = site_of[run_start]
            out[s].append((starts[i], ends[i], run_start - offsets[s], prev - offsets[s] + 1, waits[i]))
            if pid is not None:
                run_start = prev = pid
    return out


def plot_gantt(result: GridSimResult, path: Path, alloc: list[list[int]] | None = None) -> Path:
    """One panel per site: each job a rectangle per run of consecutive processors, time in hours.

    Drawn as one ``PolyCollection`` per site (10,000 jobs render in about a second), coloured by
    wait so long waits stand out; no edges (they would blacken a dense chart)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    alloc = allocate_processors(result) if alloc is None else alloc
    sites = result.platform.sites
    fig, axes = plt.subplots(len(sites), 1, figsize=(12, 2.2 + 1.6 * len(sites)), squeeze=False, sharex=True)
    t0 = float(result.submit_time.min()) if len(result) else 0.0
    wait = result.wait
    vmax = float(np.percentile(wait, 99)) if len(result) else 1.0
    cmap = plt.get_cmap("viridis")
    verts: list[list[list[tuple[float, float]]]] = [[] for _ in sites]
    colours: list[list[float]] = [[] for _ in sites]
    for s, rects in enumerate(gantt_rectangles(result, alloc, t0)):
        for x0, x1, y0, y1, w in rects:
            verts[s].append([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
            colours[s].append(w)
    for s, site in enumerate(sites):
        ax = axes[s][0]
        coll = PolyCollection(verts[s], array=np.asarray(colours[s]), cmap=cmap, linewidths=0)
        coll.set_clim(0.0, max(vmax, 1.0))
        ax.add_collection(coll)
        ax.set_ylim(0, site.procs)
        ax.set_ylabel(f"{site.name}\nprocessor")
        ax.autoscale_view(scaley=False)
    axes[-1][0].set_xlabel("time since first submit (h)")
    fig.suptitle(f"{result.platform.name}: {result.policy} ({len(result)} jobs; colour = wait)")
    fig.colorbar(
        plt.cm.ScalarMappable(norm=plt.Normalize(0.0, max(vmax, 1.0)), cmap=cmap),
        ax=[a[0] for a in axes],
        label="wait (s)",
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def compare_rows(summaries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per policy: the grid metrics, then each site's AWRT and utilization."""
    rows = []
    for summ in summaries:
        row: dict[str, Any] = {"policy": summ["policy"]}
        row.update({m: summ["grid"].get(m, "") for m in COMPARE_METRICS})
        for name, site in summ["sites"].items():
            row[f"{name}_awrt"] = site.get("awrt", "")
            row[f"{name}_utilization"] = site.get("utilization", "")
        rows.append(row)
    return rows


def write_compare(summaries: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    """``compare.csv`` and ``compare.png`` (AWRT, mean wait, mean bounded slowdown, utilization per policy)."""
    rows = compare_rows(summaries)
    cols = {k: [r.get(k, "") for r in rows] for k in rows[0]} if rows else {"policy": []}
    written = _write_table(out / "compare.csv", cols)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("awrt", "AWRT (s)"),
        ("mean_wait", "mean wait (s)"),
        ("mean_bounded_slowdown", "mean bounded slowdown"),
        ("utilization", "utilization"),
    ]
    labels = [r["policy"] for r in rows]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.6 + 0.12 * max(map(len, labels), default=0)))
    for ax, (key, title) in zip(axes, panels, strict=True):
        values = [float(r[key]) if r.get(key, "") != "" else 0.0 for r in rows]
        ax.bar(range(len(rows)), values, color=plt.get_cmap("tab10")(np.arange(len(rows)) % 10))
        ax.set_xticks(range(len(rows)), labels, rotation=35, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "compare.png", dpi=110)
    plt.close(fig)
    written.append(out / "compare.png")
    return written
