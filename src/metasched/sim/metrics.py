"""Metrics of a schedule, per job and summarised.

Per job: ``wait = start - submit``, ``response = end - submit`` (turnaround),
``slowdown = response / run``, bounded slowdown ``max(response / max(run, 10), 1)``.
Summary: means, maxima and percentiles of those; AWRT (seed 001: response weighted by
processors, ``sum(p * response) / sum(p)``); utilization ``sum(p * run) / (P * (last end -
first submit))``; makespan ``last end - first submit``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metasched.sim.schedule import Schedule

BSLD_THRESHOLD_S = 10.0


def per_job(schedule: Schedule) -> dict[str, np.ndarray]:
    """Columns of per-job metrics (only jobs that ran)."""
    submit = schedule.submit_time
    start, end = schedule.start_time, schedule.end_time
    run = schedule.run_time
    wait = start - submit
    response = end - submit
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(run > 0, response / np.where(run > 0, run, 1), np.nan)
    bsld = np.maximum(response / np.maximum(run, BSLD_THRESHOLD_S), 1.0)
    return {
        "job_id": np.array([j.job_id for j in schedule.jobs], dtype=np.int64),
        "submit_time": submit,
        "start_time": start,
        "end_time": end,
        "site": schedule.site,
        "procs": schedule.procs,
        "run_time": run,
        "requested_time": np.array([j.requested_time for j in schedule.jobs], dtype=float),
        "wait": wait,
        "response": response,
        "slowdown": slowdown,
        "bounded_slowdown": bsld,
    }


def summarise(schedule: Schedule) -> dict[str, Any]:
    """Summary metrics of a complete schedule (every job ran)."""
    cols = per_job(schedule)
    n = len(schedule.jobs)
    if n == 0:
        return {"jobs": 0}
    if not schedule.is_complete:
        raise ValueError("schedule has jobs that never started")
    procs = cols["procs"].astype(float)
    run = cols["run_time"]
    first_submit = float(cols["submit_time"].min())
    last_end = float(cols["end_time"].max())
    span = last_end - first_submit
    summary: dict[str, Any] = {
        "jobs": n,
        "total_procs": schedule.total_procs,
        "first_submit": first_submit,
        "last_end": last_end,
        "makespan": span,
        "utilization": float((procs * run).sum() / (schedule.total_procs * span)) if span > 0 else 0.0,
        "awrt": float((procs * cols["response"]).sum() / procs.sum()),
    }
    for name in ("wait", "response", "slowdown", "bounded_slowdown"):
        values = cols[name]
        values = values[np.isfinite(values)]
        if values.size == 0:
            continue
        summary[f"mean_{name}"] = float(values.mean())
        summary[f"max_{name}"] = float(values.max())
        for q in (50, 90, 99):
            summary[f"p{q}_{name}"] = float(np.percentile(values, q))
    return summary


def write_jobs_csv(schedule: Schedule, path: Path) -> None:
    """The per-job columns of :func:`per_job` as CSV, written column by column: the bytes
    ``csv.writer`` writes for the rows (``repr`` of each float, ``str`` of each integer, ``\\r\\n``
    line ends), without Python per row."""
    cols = per_job(schedule)
    names = list(cols)
    text = [list(map(repr if cols[name].dtype.kind == "f" else str, cols[name].tolist())) for name in names]
    with path.open("w", newline="") as fh:
        fh.write(",".join(names) + "\r\n")
        if schedule.jobs:
            fh.write("\r\n".join(map(",".join, zip(*text, strict=True))) + "\r\n")


def write_rows_csv(path: Path, rows: Sequence[Mapping[str, Any]], *, float_format: str | None = None) -> None:
    """Rows of dicts as CSV; columns are every key in first-seen order; no rows gives an empty file.

    ``float_format`` (e.g. ``".6g"``) formats float cells; by default they are written as ``str`` does.
    """
    if not rows:
        path.write_text("")
        return
    names: list[str] = []
    for row in rows:
        names.extend(k for k in row if k not in names)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        for row in rows:
            if float_format is None:
                writer.writerow(row)
            else:
                writer.writerow({k: format(v, float_format) if isinstance(v, float) else v for k, v in row.items()})


def read_rows_csv(path: Path, text_columns: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The rows :func:`write_rows_csv` wrote, numbers back as numbers (``int`` when written as one, else
    ``float``); the cells of ``text_columns`` stay text. A row with more or fewer cells than columns, or a
    cell that is not a number, raises ``ValueError`` naming ``FILE:LINE`` and the column."""
    texts = frozenset(text_columns)
    rows = []
    with path.open(newline="") as fh:
        for number, record in enumerate(csv.DictReader(fh), 2):
            row: dict[str, Any] = {}
            for key, text in record.items():
                if key is None or text is None:
                    raise ValueError(f"{path}:{number}: not as many cells as columns")
                if key in texts:
                    row[key] = text
                    continue
                try:
                    row[key] = int(text)
                except ValueError:
                    try:
                        row[key] = float(text)
                    except ValueError:
                        raise ValueError(f"{path}:{number}: {key} is not a number: {text!r}") from None
            rows.append(row)
    return rows


def write_summary_json(summary: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
