"""Standard Workload Format (SWF): streamed reader, normaliser and writer.

Source: the Parallel Workloads Archive's format definition (Feitelson et al., "Experience with using
the Parallel Workloads Archive", JPDC 2014, and https://www.cs.huji.ac.il/labs/parallel/workload/swf.html).
A file is header comment lines starting with ``;`` (``; Key: value``) and one line per job of 18
whitespace-separated numeric fields (:data:`FIELDS`); ``-1`` means unknown. ``.swf`` and ``.swf.gz``
are both read (gzip is recognised by the ``.gz`` suffix or by its magic bytes) and written (by suffix).

Normalisation (:func:`normalise`), applied by :func:`read_swf`:

* **processors** = max(allocated, requested processors);
* **estimate** (``requested_time``) = the requested time, or the run time where the requested time is
  unknown (any negative value counts as unknown, not only -1);
* a job whose run time is unknown (negative) is dropped, reason ``"unknown run time"``; a job with no
  processors (width <= 0 after the max) is dropped, reason ``"no processors"``. Drops are counted in
  :attr:`Workload.dropped`, never silent;
* an estimate of 0 seconds becomes 1 second: the simulator plans with ``requested_time > 0`` because a
  zero-length reservation would hold no processors at all, so a job could be "reserved" on a machine
  that is full (its start could never be protected);
* by default a job is killed at its requested time: ``run_time = min(run, estimate)`` (batch systems
  enforce the wall-time limit; traces record a few seconds of overrun from the kill latency).
  ``allow_overrun=True`` keeps the recorded run time, which may then exceed the estimate;
* the job id is the SWF job number; ids must be unique;
* jobs are sorted stably by ``(submit_time, job_id)``. The archive's traces are already sorted by
  submit time; a trace whose submit times go backwards is accepted and sorted, and that is noted in
  :attr:`Workload.notes`.

Malformed input raises :class:`SwfError` naming the file and line: wrong field count, a non-numeric
(or non-finite) field (numbers are plain decimals: ``1_0``, which Python's ``float`` reads as 10, is
refused), an integer field (job number, processors, status, user ... preceding job) outside the
signed 64-bit range, a non-integral job number or processor count, a negative submit time, a
duplicate job number, a job wider than the machine (when the machine size is known from the header
or the caller), a line with NUL bytes (a binary file, or UTF-16/32 text; a UTF-8 byte-order mark
at the start is skipped). A truncated, corrupt or non-gzip ``.gz`` file
raises :class:`SwfError` naming the file (and the last line read). Both engines read every file the
same way (the fuzz suite, ``tests/fuzz/test_swf_fuzz.py``, checks it on a mutation corpus).

The header is the ``; Key: value`` comment lines before the first job line (a repeated key's values
are joined by newlines, an indented line continues the previous key); later comments are ignored.

Fields that :class:`~metasched.model.Job` does not keep (wait time, average CPU time, memory,
allocated processors) are not retained; :func:`write_swf` writes ``-1`` there, or the simulated wait
when start times are given. ``home_site``, ``app_class`` and ``attrs`` have no SWF field and are not
written.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import warnings
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple, cast

import numpy as np

from metasched.model import Job

__all__ = [
    "FIELDS",
    "SwfError",
    "SwfRecord",
    "Workload",
    "iter_records",
    "normalise",
    "read_header",
    "read_swf",
    "read_swf_python",
    "write_swf",
]

FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "average_cpu_time",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
"""The 18 SWF fields, in file order."""

N_FIELDS = len(FIELDS)

DROP_UNKNOWN_RUN = "unknown run time"
DROP_NO_PROCS = "no processors"

_GZIP_MAGIC = b"\x1f\x8b"

#: Fields read as integers (job number, processors, status, user ... preceding job): each must fit
#: a signed 64-bit integer, so both engines (NumPy's int64 and Python's int) read the same value.
_INT_FIELDS = (0, 4, 7, 10, 11, 12, 13, 14, 15, 16)
_INT64_MIN = -(2.0**63)
_INT64_END = 2.0**63

_UTF8_BOM = "\xef\xbb\xbf"

#: What a truncated, corrupt or non-gzip ``.gz`` file raises while it is read.
_DECOMPRESS_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)


def _decompress_error(source: str, lineno: int, exc: BaseException) -> SwfError:
    after = f" after line {lineno}" if lineno else ""
    if isinstance(exc, EOFError):
        return SwfError(source, None, f"truncated gzip file (it ends{after} before the end of its compressed data)")
    return SwfError(source, None, f"not a valid gzip file (corrupt{after}: {exc})")


class SwfError(ValueError):
    """Malformed SWF input; the message names the file and, when there is one, the line."""

    def __init__(self, source: str, line: int | None, message: str) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.source = source
        self.line = line


class SwfRecord(NamedTuple):
    """One raw job line: its 1-based line number and its 18 fields as floats (-1 = unknown)."""

    line: int
    fields: tuple[float, ...]


@dataclass(slots=True)
class Workload:
    """A normalised trace.

    ``records`` counts the job lines read; ``len(jobs) + sum(dropped.values()) == records``.
    ``max_procs`` is the machine size: the caller's value, else the header's ``MaxProcs``, else its
    ``MaxNodes``, else the widest job seen. ``header`` maps each ``; Key: value`` key to its value
    (repeated keys, like ``Queue`` or ``Note``, are joined with newlines; continuation lines without a
    key are appended to the previous key's value, up to a bare ``;`` line; other free-text comments are
    not kept).
    """

    jobs: list[Job]
    header: dict[str, str] = field(default_factory=dict)
    max_procs: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    source: str = ""
    records: int = 0
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------- reading


def _open_text(path: str | os.PathLike[str]) -> IO[str]:
    p = Path(path)
    with open(p, "rb") as probe:
        magic = probe.read(2)
    if p.suffix == ".gz" or magic == _GZIP_MAGIC:
        # latin-1 never fails: some archive headers carry non-UTF-8 names.
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="latin-1", newline=None)
    return open(p, encoding="latin-1", newline=None)


def _parse_header_line(text: str, header: dict[str, str], last_key: list[str]) -> None:
    body = text[1:] if text.startswith(";") else text
    # A key line is "; Key: value" (one space at most before the key, the key one word, a blank or
    # nothing after the colon); anything else, like an indented "http://..." line, continues the
    # previous key.
    indented = body.startswith("  ") or body.startswith("\t")
    body = body.strip()
    if not body:  # a bare ";" ends the previous key's continuation lines
        last_key.clear()
        return
    key, sep, value = body.partition(":")
    if not indented and sep and key.replace("_", "").replace("-", "").isalnum() and (not value or value[0] in " \t"):
        value = value.strip()
        header[key] = f"{header[key]}\n{value}" if key in header else value
        last_key[:] = [key]
    elif last_key:  # continuation line of the previous key
        k = last_key[0]
        header[k] = f"{header[k]}\n{body}"


def iter_records(path: str | os.PathLike[str], *, header: dict[str, str] | None = None) -> Iterator[SwfRecord]:
    """Yield the job lines of ``path`` as :class:`SwfRecord`, streaming (O(1) memory).

    The comment lines before the first job line fill ``header`` when a dict is given (so it is
    complete when the first record is yielded); later comment lines and blank lines are skipped.
    Raises :class:`SwfError` on a line without 18 fields or with a non-numeric or non-finite field.
    """
    source = str(path)
    last_key: list[str] = []
    in_jobs = False
    isfinite = math.isfinite
    lineno = 0
    with _open_text(path) as fh:
        lines = enumerate(fh, start=1)
        while True:
            try:
                item = next(lines, None)
            except _DECOMPRESS_ERRORS as exc:
                raise _decompress_error(source, lineno, exc) from None
            if item is None:
                break
            lineno, text = item
            if lineno == 1 and text.startswith(_UTF8_BOM):  # an editor's UTF-8 byte-order mark, read as latin-1
                text = text[len(_UTF8_BOM) :]
            if "\x00" in text:
                raise SwfError(source, lineno, "NUL bytes: a binary file or UTF-16/32 text, not an SWF text file")
            parts = text.split()
            if not parts:
                continue
            if parts[0][0] == ";":
                if header is not None and not in_jobs:
                    _parse_header_line(text.strip(), header, last_key)
                continue
            in_jobs = True
            if len(parts) != N_FIELDS:
                raise SwfError(source, lineno, f"expected {N_FIELDS} fields, found {len(parts)}")
            try:
                # float() reads "1_0" as 10; SWF numbers are plain decimals (and NumPy refuses it).
                values = () if "_" in text else tuple(map(float, parts))
            except ValueError:
                values = ()
            if not values or not all(map(isfinite, values)):
                for name, raw in zip(FIELDS, parts, strict=True):
                    try:
                        ok = "_" not in raw and isfinite(float(raw))
                    except ValueError:
                        ok = False
                    if not ok:
                        raise SwfError(source, lineno, f"field {name!r} is not a finite number: {raw!r}") from None
            if max(values) >= _INT64_END or min(values) < _INT64_MIN:  # (rare: one C pass per line)
                for k in _INT_FIELDS:
                    v = values[k]
                    if _INT64_MIN <= v < _INT64_END:
                        continue
                    raise SwfError(
                        source, lineno, f"field {FIELDS[k]!r} is out of range (64-bit integer): {parts[k]!r}"
                    )
            yield SwfRecord(lineno, values)


def read_header(path: str | os.PathLike[str]) -> dict[str, str]:
    """The header mapping of ``path`` (reads only up to the first job line)."""
    header: dict[str, str] = {}
    for _ in iter_records(path, header=header):
        break
    return header


def _leading_int(value: str | None) -> int | None:
    """``"338 (batch partition; 512 total)"`` -> 338; None when there is no leading integer."""
    if not value:
        return None
    token = value.split()[0] if value.split() else ""
    try:
        n = int(token)
    except ValueError:
        return None
    return n if n > 0 else None


def header_max_procs(header: Mapping[str, str]) -> int | None:
    """Machine size from a header: ``MaxProcs``, else ``MaxNodes``, else None."""
    return _leading_int(header.get("MaxProcs")) or _leading_int(header.get("MaxNodes"))


def normalise(
    records: Iterable[SwfRecord],
    *,
    allow_overrun: bool = False,
    max_procs: int | None = None,
    source: str = "<records>",
) -> tuple[list[Job], dict[str, int], int, list[str]]:
    """Turn raw records into jobs by the rules of the module docstring.

    Returns ``(jobs, dropped, records_seen, notes)``; ``jobs`` is sorted stably by
    ``(submit_time, job_id)``. Invariant: ``len(jobs) + sum(dropped.values()) == records_seen``.
    """
    jobs: list[Job] = []
    append = jobs.append
    dropped_run = 0
    dropped_procs = 0
    n = 0
    seen_ids: set[int] = set()
    last_submit = -math.inf
    backwards = 0
    first_backwards: int | None = None
    for lineno, f in records:
        n += 1
        number = f[0]
        job_id = int(number)
        if job_id != number:
            raise SwfError(source, lineno, f"job number {number!r} is not an integer")
        if job_id in seen_ids:
            raise SwfError(source, lineno, f"duplicate job number {job_id}")
        seen_ids.add(job_id)
        submit = f[1]
        if submit < 0:
            raise SwfError(source, lineno, f"negative submit time {submit:g} (job {job_id})")
        if submit < last_submit:
            backwards += 1
            if first_backwards is None:
                first_backwards = lineno
        else:
            last_submit = submit
        alloc, req = f[4], f[7]
        procs_f = alloc if alloc > req else req
        procs = int(procs_f)
        if procs != procs_f:
            raise SwfError(source, lineno, f"processor count {procs_f!r} is not an integer (job {job_id})")
        if max_procs is not None and procs > max_procs:
            raise SwfError(
                source,
                lineno,
                f"job {job_id} uses {procs} processors, wider than the machine ({max_procs}; "
                "the header's MaxProcs/MaxNodes unless max_procs= overrides it)",
            )
        run = f[3]
        if run < 0:
            dropped_run += 1
            continue
        if procs <= 0:
            dropped_procs += 1
            continue
        estimate = f[8]
        if estimate < 0:
            estimate = run
        if estimate <= 0:
            estimate = 1.0
        if not allow_overrun and run > estimate:
            run = estimate
        append(
            Job(
                job_id,
                submit,
                run,
                estimate,
                procs,
                int(f[11]),
                int(f[12]),
                int(f[13]),
                int(f[14]),
                int(f[15]),
                int(f[10]),
                int(f[16]),
                f[17],
            )
        )
    dropped: dict[str, int] = {}
    if dropped_run:
        dropped[DROP_UNKNOWN_RUN] = dropped_run
    if dropped_procs:
        dropped[DROP_NO_PROCS] = dropped_procs
    notes: list[str] = []
    if backwards:
        notes.append(
            f"{source}: submit times go backwards on {backwards} line(s) (first at line {first_backwards}); "
            "jobs were sorted by (submit_time, job_id)"
        )
    jobs.sort(key=lambda j: (j.submit_time, j.job_id))
    return jobs, dropped, n, notes


def read_swf(
    path: str | os.PathLike[str], *, allow_overrun: bool = False, max_procs: int | None = None, first: int | None = None
) -> Workload:
    """Read and normalise an SWF (or gzipped SWF) file; see the module docstring for the rules.

    ``max_procs`` overrides the header's machine size. ``first``: keep only the first ``first``
    jobs in submit order (``transforms.first_n`` of them; the whole file is still read and
    checked, and ``dropped``/``records``/``max_procs`` describe it; only the kept jobs are made
    ``Job`` objects by the fast engine). Raises :class:`SwfError` on malformed input and
    ``FileNotFoundError`` when the file is missing.

    Two engines give the same result: a vectorised one (NumPy's C ``loadtxt`` and array
    normalisation, about 4x faster), used when the file is well formed and already sorted by
    submit time, and the streaming pure-Python :func:`iter_records` + :func:`normalise`, used
    otherwise, which finds the first bad line and names it (or notes and sorts an unsorted trace).
    """
    source = str(path)
    if first is not None and first < 0:
        raise ValueError(f"first must be >= 0, got {first}")
    header, jobs, dropped, n, notes, size = _read(path, allow_overrun, max_procs, first)
    return Workload(jobs=jobs, header=header, max_procs=size, dropped=dropped, source=source, records=n, notes=notes)


def read_swf_head(
    path: str | os.PathLike[str], n: int, *, allow_overrun: bool = False, max_procs: int | None = None
) -> tuple[list[Job], int]:
    """The first ``n`` jobs of :func:`read_swf` in submit order and the machine size it gives:
    ``(transforms.first_n(w.jobs, n), w.max_procs)`` for ``w = read_swf(path, ...)``, with the same
    checks of the whole file, but only those ``n`` jobs made ``Job`` objects when the fast engine
    reads it (an experiment on a trace's first 5,000 jobs: ~0.2 s less per trace of ~75,000)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    _, jobs, _, _, _, size = _read(path, allow_overrun, max_procs, n)
    return jobs, size


def _read(
    path: str | os.PathLike[str], allow_overrun: bool, max_procs: int | None, first: int | None
) -> tuple[dict[str, str], list[Job], dict[str, int], int, list[str], int]:
    """``(header, jobs, dropped, records, notes, machine size)`` of the file by either engine (see
    :func:`read_swf`); ``jobs`` cut to their ``first`` (all: ``None``), the rest of the whole file."""
    if max_procs is not None and max_procs <= 0:
        raise ValueError(f"max_procs must be positive, got {max_procs}")
    header = read_header(path)
    declared = max_procs if max_procs is not None else header_max_procs(header)
    result = _normalise_fast(path, declared, allow_overrun, first)
    if result is None:
        records = iter_records(path)
        jobs, dropped, n, notes = normalise(records, allow_overrun=allow_overrun, max_procs=declared, source=str(path))
        widest = max((j.requested_procs for j in jobs), default=0)
        result = (jobs if first is None else jobs[:first]), dropped, n, notes, widest
    jobs, dropped, n, notes, widest = result
    return header, jobs, dropped, n, notes, declared if declared is not None else widest


def read_swf_python(
    path: str | os.PathLike[str], *, allow_overrun: bool = False, max_procs: int | None = None
) -> Workload:
    """:func:`read_swf` with the streaming pure-Python engine only (the reference the fast engine is
    tested against; O(1) memory besides the jobs)."""
    if max_procs is not None and max_procs <= 0:
        raise ValueError(f"max_procs must be positive, got {max_procs}")
    source = str(path)
    header: dict[str, str] = {}
    records = iter_records(path, header=header)
    # The header precedes the first job line: pull one record so the header is complete before
    # checking widths against the machine size.
    first = next(records, None)
    declared = max_procs if max_procs is not None else header_max_procs(header)

    def chained() -> Iterator[SwfRecord]:
        if first is not None:
            yield first
            yield from records

    jobs, dropped, n, notes = normalise(chained(), allow_overrun=allow_overrun, max_procs=declared, source=source)
    size = declared if declared is not None else max((j.requested_procs for j in jobs), default=0)
    return Workload(jobs=jobs, header=header, max_procs=size, dropped=dropped, source=source, records=n, notes=notes)


_CHUNK = 1 << 15


def _normalise_fast(
    path: str | os.PathLike[str], max_procs: int | None, allow_overrun: bool, first: int | None = None
) -> tuple[list[Job], dict[str, int], int, list[str], int] | None:
    """The rules of :func:`normalise` on a NumPy array: ``(jobs, dropped, records, notes, widest)``,
    ``widest`` the widest job of them all (0: none), only the ``first`` jobs made (all with
    ``None``); None when the input needs the Python engine (any malformed line, or submit times
    going backwards), which then reports it by line."""
    try:
        with _open_text(path) as fh, warnings.catch_warnings():
            warnings.simplefilter("error")  # "input contained no data" must not pass silently
            a = np.loadtxt(fh, comments=";", dtype=np.float64, ndmin=2)
    except (ValueError, UserWarning, *_DECOMPRESS_ERRORS):
        return None
    n = a.shape[0]
    if a.shape[1] != N_FIELDS or not np.isfinite(a).all():
        return None
    ints = a[:, _INT_FIELDS]
    if ((ints < _INT64_MIN) | (ints >= _INT64_END)).any():
        return None
    ids, submit = a[:, 0], a[:, 1]
    procs = np.maximum(a[:, 4], a[:, 7])
    if (
        (ids != np.trunc(ids)).any()
        or np.unique(ids).size != n
        or (submit < 0).any()
        or (n > 1 and (np.diff(submit) < 0).any())
        or (procs != np.trunc(procs)).any()
        or (max_procs is not None and (procs > max_procs).any())
    ):
        return None
    run = a[:, 3]
    drop_run = run < 0
    drop_procs = ~drop_run & (procs <= 0)
    keep = ~(drop_run | drop_procs)
    rows = np.flatnonzero(keep)
    # Submit times are non-decreasing here; the sort only orders equal submits by job id.
    rows = rows[np.lexsort((ids[rows], submit[rows]))]
    widest = int(procs[rows].max()) if rows.size else 0
    if first is not None:
        rows = rows[:first]
    run, procs_int = run[rows], procs[rows].astype(np.int64)
    estimate = a[rows, 8]
    estimate = np.where(estimate < 0, run, estimate)
    estimate = np.where(estimate <= 0, 1.0, estimate)
    if not allow_overrun:
        run = np.minimum(run, estimate)
    jobs: list[Job] = []
    # Built column-wise in chunks: the per-column Python lists stay small (peak memory).
    for lo in range(0, rows.size, _CHUNK):
        hi = lo + _CHUNK
        block = a[rows[lo:hi]]
        ints = block.astype(np.int64)
        jobs.extend(
            map(
                Job,
                ints[:, 0].tolist(),
                block[:, 1].tolist(),
                run[lo:hi].tolist(),
                estimate[lo:hi].tolist(),
                procs_int[lo:hi].tolist(),
                *(ints[:, k].tolist() for k in (11, 12, 13, 14, 15, 10, 16)),
                block[:, 17].tolist(),
            )
        )
    dropped: dict[str, int] = {}
    if drop_run.any():
        dropped[DROP_UNKNOWN_RUN] = int(drop_run.sum())
    if drop_procs.any():
        dropped[DROP_NO_PROCS] = int(drop_procs.sum())
    return jobs, dropped, n, [], widest


# --------------------------------------------------------------------------------------------- writing


def _num(x: float) -> str:
    """Shortest text that reads back to exactly ``x`` (integers without a decimal point)."""
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


def _lookup(values: Sequence[float] | Mapping[int, float], job: Job, index: int) -> float:
    if isinstance(values, Mapping):
        return float(values[job.job_id])
    return float(values[index])


def write_swf(
    path: str | os.PathLike[str],
    jobs: Iterable[Job],
    *,
    header: Mapping[str, str] | None = None,
    start_time: Sequence[float] | Mapping[int, float] | None = None,
    end_time: Sequence[float] | Mapping[int, float] | None = None,
) -> None:
    """Write ``jobs`` as SWF (gzipped when ``path`` ends in ``.gz``).

    ``header`` lines are written as ``; Key: value`` (multi-line values give one line each).
    ``start_time`` / ``end_time`` (aligned with ``jobs``, or mappings by ``job_id``) are a simulated
    schedule: the wait field becomes ``start - submit`` and, with ``end_time``, the run field becomes
    ``end - start``. Without them the wait field is ``-1``. A start before the submit or an end
    before the start raises ``ValueError`` (a broken schedule must not be written).

    Round trip: ``read_swf(path, allow_overrun=True).jobs`` equals the (normalised, submit-sorted)
    jobs written, field for field, except ``home_site``, ``app_class`` and ``attrs``, which SWF does not
    carry.
    """
    p = Path(path)
    raw = cast(IO[bytes], gzip.open(p, "wb", compresslevel=6) if p.suffix == ".gz" else open(p, "wb"))  # noqa: SIM115
    with raw, io.TextIOWrapper(raw, encoding="latin-1", newline="\n") as out:
        for key, value in (header or {}).items():
            for part in str(value).split("\n"):
                out.write(f"; {key}: {part}\n".replace(": \n", ":\n"))
        if header:
            out.write(";\n")
        lines: list[str] = []
        num = _num
        for i, job in enumerate(jobs):
            wait = -1.0
            run = job.run_time
            if start_time is not None:
                start = _lookup(start_time, job, i)
                wait = start - job.submit_time
                if wait < 0:
                    raise ValueError(
                        f"write_swf: job {job.job_id} starts at {start}, before its submit {job.submit_time}"
                    )
                if end_time is not None:
                    run = _lookup(end_time, job, i) - start
                    if run < 0:
                        raise ValueError(f"write_swf: job {job.job_id} ends before it starts ({start})")
            p_ = str(job.requested_procs)
            lines.append(
                " ".join(
                    (
                        str(job.job_id),
                        num(job.submit_time),
                        num(wait),
                        num(run),
                        p_,
                        "-1",
                        "-1",
                        p_,
                        num(job.requested_time),
                        "-1",
                        str(job.status),
                        str(job.user_id),
                        str(job.group_id),
                        str(job.executable),
                        str(job.queue),
                        str(job.partition),
                        str(job.preceding_job),
                        num(job.think_time),
                    )
                )
            )
            if len(lines) >= 4096:
                out.write("\n".join(lines) + "\n")
                lines.clear()
        if lines:
            out.write("\n".join(lines) + "\n")
