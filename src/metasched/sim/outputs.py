"""Per-job outputs of a single-site simulation written column by column (no Python per row):
``jobs.csv`` (:func:`metasched.sim.metrics.write_jobs_csv`), ``schedule.swf``
(:func:`write_schedule_swf`, the same bytes as :func:`metasched.workload.swf.write_swf`) and,
when pyarrow is installed, ``jobs.parquet`` (:func:`write_jobs_parquet`)."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import IO, cast

import numpy as np

from metasched.model.job import Job
from metasched.sim.metrics import per_job
from metasched.sim.schedule import Schedule

#: The columns of an SWF line after the processors and the estimate (``write_swf``'s order).
_TAIL = ("status", "user_id", "group_id", "executable", "queue", "partition", "preceding_job")


def number_text(values: np.ndarray) -> list[str]:
    """Each value as :func:`metasched.workload.swf._num` writes it: an integer (``abs < 1e15``)
    without a decimal point, any other value as ``repr`` of its float."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        integral = np.isfinite(values) & (np.abs(values) < 1e15) & (values == np.trunc(values))
    if integral.all():
        return list(map(str, values.astype(np.int64).tolist()))
    text = list(map(repr, values.tolist()))
    where = np.flatnonzero(integral)
    for i, s in zip(where.tolist(), map(str, values[where].astype(np.int64).tolist()), strict=True):
        text[i] = s
    return text


def write_schedule_swf(
    path: Path,
    jobs: Sequence[Job],
    start_time: np.ndarray,
    end_time: np.ndarray,
    *,
    header: Mapping[str, str] | None = None,
) -> None:
    """``write_swf(path, jobs, header=header, start_time=start_time, end_time=end_time)`` for a
    complete schedule aligned with ``jobs``: the same bytes, the same ``ValueError`` for a start
    before a submit or an end before a start, over columns."""
    n = len(jobs)
    submit = np.fromiter(map(attrgetter("submit_time"), jobs), dtype=np.float64, count=n)
    start = np.asarray(start_time, dtype=np.float64)
    wait = start - submit
    run = np.asarray(end_time, dtype=np.float64) - start
    bad = np.flatnonzero(wait < 0)
    if bad.size:
        job = jobs[int(bad[0])]
        raise ValueError(
            f"write_swf: job {job.job_id} starts at {float(start[bad[0]])}, before its submit {job.submit_time}"
        )
    bad = np.flatnonzero(run < 0)
    if bad.size:
        job = jobs[int(bad[0])]
        raise ValueError(f"write_swf: job {job.job_id} ends before it starts ({float(start[bad[0]])})")
    procs = list(map(str, map(attrgetter("requested_procs"), jobs)))
    minus = ["-1"] * n

    def floats(name: str) -> list[str]:
        return number_text(np.fromiter(map(attrgetter(name), jobs), dtype=np.float64, count=n))

    columns: list[Iterable[str]] = [
        map(str, map(attrgetter("job_id"), jobs)),
        number_text(submit),
        number_text(wait),
        number_text(run),
        procs,
        minus,
        minus,
        procs,
        floats("requested_time"),
        minus,
        *(map(str, map(attrgetter(name), jobs)) for name in _TAIL),
        floats("think_time"),
    ]
    p = Path(path)
    raw = cast(IO[bytes], gzip.open(p, "wb", compresslevel=6) if p.suffix == ".gz" else open(p, "wb"))  # noqa: SIM115
    with raw, io.TextIOWrapper(raw, encoding="latin-1", newline="\n") as out:
        for key, value in (header or {}).items():
            for part in str(value).split("\n"):
                out.write(f"; {key}: {part}\n".replace(": \n", ":\n"))
        if header:
            out.write(";\n")
        if n:
            out.write("\n".join(map(" ".join, zip(*columns, strict=True))) + "\n")


def write_jobs_parquet(schedule: Schedule, path: Path) -> None:
    """The columns of ``jobs.csv`` as a Parquet file (needs pyarrow: ``ImportError`` without it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = per_job(schedule)
    pq.write_table(pa.table({name: pa.array(values) for name, values in cols.items()}), str(path))
