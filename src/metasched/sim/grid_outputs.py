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
    t_start = np.asarray(result.start_time, dtype=np.float64)
    t_end = np.asarray(result.end_time, dtype=np.float64)
    order = np.lexsort((np.arange(len(result)), t_end > t_start, t_start)).tolist()
    starts, finishes, parts = t_start.tolist(), t_end.tolist(), result.parts
    ends: list[tuple[float, int]] = []
    held: dict[int, list[tuple[int, list[int]]]] = {}
    out: list[list[int]] = [[] for _ in range(len(result))]
    pop, push = heapq.heappop, heapq.heappush
    for i in order:
        start = starts[i]
        while ends and ends[0][0] <= start:
            _, j = heapq.heappop(ends)
            for site, ids in held.pop(j):
                heap = free[site]
                for pid in ids:
                    push(heap, pid)
        taken: list[tuple[int, list[int]]] = []
        for site, n in parts[i]:
            if len(free[site]) < n:
                raise ValueError(
                    f"job {int(result.job_id[i])}: site {site} has {len(free[site])} free processors, needs {n}"
                )
            heap = free[site]
            ids = [pop(heap) for _ in range(n)]  # popped in increasing order: already sorted
            taken.append((site, ids))
        held[i] = taken
        push(ends, (finishes[i], i))
        out[i] = taken[0][1] if len(taken) == 1 else sorted(pid for _, ids in taken for pid in ids)
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


def _cell(value: Any) -> str:
    """One CSV cell as ``csv.writer`` writes it (minimal quoting)."""
    if value is None:
        return ""
    text = repr(value) if isinstance(value, float) else str(value)
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _column_text(values: Sequence[Any] | np.ndarray) -> list[str]:
    """A column's cells: numeric arrays by ``repr``/``str`` of their values, anything else cell by cell."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iub":
        return list(map(str, values.tolist()))
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        return list(map(repr, values.tolist()))
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if all(type(v) is str for v in items):
        joined = "".join(items)
        if not any(c in joined for c in ',"\r\n'):
            return items  # nothing to quote (the common case): the strings as they are
    return list(map(_cell, items))


def arrow_array(pa: Any, values: Sequence[Any] | np.ndarray) -> Any:
    """``pa.array(np.asarray(values).tolist())``'s array (int64, float64, bool or string), built from
    the column's buffers: ``pa.array`` imports pandas, when installed, to look for pandas types
    (~0.4 s of CPU, more than writing the file). Columns of other values (``None``, mixed objects,
    none at all) go through ``pa.array``."""
    arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    kind, n = arr.dtype.kind, len(arr)
    if n == 0 or arr.ndim != 1:
        return pa.array(arr.tolist())
    if kind in "iu":
        return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(np.ascontiguousarray(arr, dtype=np.int64))])
    if kind == "f":
        return pa.Array.from_buffers(pa.float64(), n, [None, pa.py_buffer(np.ascontiguousarray(arr, dtype=np.float64))])
    if kind == "b":
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(arr, bitorder="little"))])
    items = arr.tolist()
    if kind == "U" or all(type(v) is str for v in items):
        encoded = [str(v).encode() for v in items]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=n), out=offsets[1:])
        if offsets[-1] < 2**31:
            buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))]
            return pa.Array.from_buffers(pa.string(), n, buffers)
    return pa.array(items)


def _write_table(path: Path, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> list[Path]:
    """``path`` as CSV, and a ``.parquet`` beside it when pyarrow is installed; the files written.

    The CSV holds the bytes ``csv.writer`` writes for the rows, built column by column."""
    names = list(columns)
    text = [_column_text(columns[n]) for n in names]
    with path.open("w", newline="") as fh:
        fh.write(",".join(map(_cell, names)) + "\r\n")
        if text and text[0]:
            fh.write("\r\n".join(map(",".join, zip(*text, strict=True))) + "\r\n")
    written = [path]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return written

    arrays = [arrow_array(pa, columns[n]) for n in names]
    pq.write_table(pa.Table.from_arrays(arrays, names=names), path.with_suffix(".parquet"))
    written.append(path.with_suffix(".parquet"))
    return written


def batsim_columns(result: GridSimResult, alloc: list[list[int]] | None = None) -> dict[str, Any]:
    """The columns of ``jobs_batsim.csv`` (Batsim's ``_jobs.csv``, as evalys reads it)."""
    alloc = allocate_processors(result) if alloc is None else alloc
    submit, start, end = result.submit_time, result.start_time, result.end_time
    n = len(result)
    run = end - start
    return {
        "job_id": result.job_id,
        "workload_name": ["w0"] * n,
        "profile": ["delay"] * n,
        "submission_time": np.asarray(submit, dtype=np.float64),
        "requested_number_of_resources": result.procs,
        "requested_time": run,
        "success": np.ones(n, dtype=np.int64),
        "final_state": ["COMPLETED_SUCCESSFULLY"] * n,
        "starting_time": np.asarray(start, dtype=np.float64),
        "execution_time": run,
        "finish_time": np.asarray(end, dtype=np.float64),
        "waiting_time": start - submit,
        "turnaround_time": end - submit,
        "stretch": (end - submit) / np.maximum(run, 1e-9),
        "allocated_resources": [intervals(a) for a in alloc],
        "consumed_energy": np.full(n, -1, dtype=np.int64),
        "metadata": [""] * n,
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


#: Columns of the Gantt chart's raster (about the axes' width in pixels at 110 dpi) and most rows per site.
GANTT_COLUMNS = 1200
GANTT_ROWS = 1000


def gantt_raster(
    rects: Sequence[tuple[float, float, int, int, float]], procs: int, t_end: float
) -> tuple[np.ndarray, int]:
    """One site's rectangles painted into an image: ``(rows, GANTT_COLUMNS)`` of each cell's job's
    wait, NaN where no job ran; and the number of rows (the processors, binned by ``procs / rows``
    when a site has more than :data:`GANTT_ROWS`). A rectangle covers every cell it touches, at least
    one, so a short job stays visible; where two touch one cell (shorter than a cell), the later wins."""
    rows = min(max(procs, 1), GANTT_ROWS)
    img = np.full((rows, GANTT_COLUMNS), np.nan)
    if not rects:
        return img, rows
    arr = np.asarray(rects, dtype=np.float64)
    xs = GANTT_COLUMNS / t_end if t_end > 0 else 0.0
    ys = rows / max(procs, 1)
    c0 = np.clip(np.floor(arr[:, 0] * xs), 0, GANTT_COLUMNS - 1).astype(np.int64)
    c1 = np.maximum(c0 + 1, np.minimum(np.ceil(arr[:, 1] * xs), GANTT_COLUMNS)).astype(np.int64)
    r0 = np.clip(np.floor(arr[:, 2] * ys), 0, rows - 1).astype(np.int64)
    r1 = np.maximum(r0 + 1, np.minimum(np.ceil(arr[:, 3] * ys), rows)).astype(np.int64)
    for a, b, c, d, w in zip(r0.tolist(), r1.tolist(), c0.tolist(), c1.tolist(), arr[:, 4].tolist(), strict=True):
        img[a:b, c:d] = w
    return img, rows


def plot_gantt(result: GridSimResult, path: Path, alloc: list[list[int]] | None = None) -> Path:
    """One panel per site: each job a rectangle per run of consecutive processors, time in hours.

    The rectangles are painted into one image per site (:func:`gantt_raster`, ``GANTT_COLUMNS``
    columns over the run's span, a row per processor) and drawn with ``imshow``: the time to draw
    hardly depends on the number of jobs (50,000 jobs in a fraction of a second), and every job
    stays visible however short. Coloured by wait so long waits stand out; white where idle.
    Drawn on a bare Agg canvas (no ``pyplot``)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    alloc = allocate_processors(result) if alloc is None else alloc
    sites = result.platform.sites
    fig = Figure(figsize=(12, 2.2 + 1.6 * len(sites)))
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(sites), 1, squeeze=False, sharex=True)
    t0 = float(result.submit_time.min()) if len(result) else 0.0
    t_end = float(result.end_time.max() - t0) / 3600.0 if len(result) else 1.0
    t_end = t_end if t_end > 0 else 1.0
    wait = result.wait
    norm = Normalize(0.0, max(float(np.percentile(wait, 99)) if len(result) else 1.0, 1.0))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
    for s, rects in enumerate(gantt_rectangles(result, alloc, t0)):
        ax = axes[s][0]
        img, _ = gantt_raster(rects, sites[s].procs, t_end)
        ax.imshow(
            img,
            origin="lower",
            aspect="auto",
            interpolation="nearest",
            extent=(0.0, t_end, 0.0, float(sites[s].procs)),
            cmap=cmap,
            norm=norm,
        )
        ax.set_ylabel(f"{sites[s].name}\nprocessor")
    axes[-1][0].set_xlabel("time since first submit (h)")
    fig.suptitle(f"{result.platform.name}: {result.policy} ({len(result)} jobs; colour = wait)")
    fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=[a[0] for a in axes], label="wait (s)")
    fig.savefig(path, dpi=110)
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


def write_compare(summaries: Sequence[Mapping[str, Any]], out: Path, *, plot: bool = True) -> list[Path]:
    """``compare.csv`` and (``plot``) ``compare.png``: AWRT, mean wait, bounded slowdown, utilization per policy."""
    rows = compare_rows(summaries)
    cols = {k: [r.get(k, "") for r in rows] for k in rows[0]} if rows else {"policy": []}
    written = _write_table(out / "compare.csv", cols)
    if not plot:
        return written
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = [
        ("awrt", "AWRT (s)"),
        ("mean_wait", "mean wait (s)"),
        ("mean_bounded_slowdown", "mean bounded slowdown"),
        ("utilization", "utilization"),
    ]
    labels = [r["policy"] for r in rows]
    fig = Figure(figsize=(3.2 * len(panels), 3.6 + 0.12 * max(map(len, labels), default=0)))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels))
    tab10 = matplotlib.colormaps["tab10"]
    for ax, (key, title) in zip(axes, panels, strict=True):
        values = [float(r[key]) if r.get(key, "") != "" else 0.0 for r in rows]
        ax.bar(range(len(rows)), values, color=tab10(np.arange(len(rows)) % 10))
        ax.set_xticks(range(len(rows)), labels, rotation=35, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "compare.png", dpi=110)
    written.append(out / "compare.png")
    return written
