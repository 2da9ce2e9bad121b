"""Fuzzing the SWF reader (issue 33): a corpus of mutations of real traces plus hypothesis.

The assertion for every input: both engines (:func:`read_swf`, NumPy, and :func:`read_swf_python`,
streaming) give the same answer, which is either the same :class:`SwfError` (the documented
refusal, naming the file) or the same workload (the documented acceptance); never another
exception (a traceback in the CLI), never a hang (pytest-timeout), never memory that grows with a
value in the file (tracemalloc: the peak is bounded by the file's size, whatever its numbers say).
"""

from __future__ import annotations

import gzip
import os
import random
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metasched.workload.swf import SwfError, Workload, read_swf, read_swf_python

DATA = Path(__file__).resolve().parents[1] / "data"
# Bad values of one field: non-numeric, NaN/inf, huge, beyond int64, negative, fractional, odd
# spellings Python's float() accepts, binary and non-ASCII bytes.
BAD_VALUES = [
    "abc",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "1e400",
    "1e19",
    "-1e19",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999999999",
    "1_0",
    "0x10",
    "-1",
    "-5",
    "-0",
    "1.5",
    "+3",
    ".5",
    "5.",
    "1e5",
    "1E-3",
    "\x00",
    "\xff\xfe",
    "\u00a0",
    "\u00b2",
    "٣",
    ";",
]
HUGE_HEADERS = ["; MaxProcs: 1000000000\n", "; MaxProcs: 1000000000000\n", "; MaxNodes: 99999999999999999999\n"]
MAX_LINES = 60  # lines of each real trace kept in the corpus (its header and first jobs)


def _shared_traces() -> list[Path]:
    env = os.environ.get("METASCHED_SHARED")
    roots = [Path(env)] if env else [Path(__file__).resolve().parents[3] / "shared", Path("/work/shared")]
    for root in roots:
        found = sorted((root / "data" / "traces").glob("*.swf*"))
        if found:
            return found
    return []


def _base_texts() -> list[tuple[str, str]]:
    bases = [(p.name, p.read_text(encoding="latin-1")) for p in sorted(DATA.glob("swf_*.swf"))]
    for path in _shared_traces()[:3]:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="latin-1") as fh:
            lines = [next(fh, "") for _ in range(400)]
        header = [ln for ln in lines if ln.startswith(";")][:40]
        jobs = [ln for ln in lines if ln.strip() and not ln.startswith(";")][:MAX_LINES]
        bases.append((path.name, "".join(header + jobs)))
    return bases


def _mutants(seed: int = 33) -> Iterator[tuple[str, bytes, str]]:
    """``(id, bytes, suffix)`` of each mutant: deterministic (seeded)."""
    rng = random.Random(seed)
    for name, text in _base_texts():
        lines = text.splitlines(keepends=True)
        jobs = [i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith(";")]
        if not jobs:
            continue
        for k, value in enumerate(BAD_VALUES):
            i = rng.choice(jobs)
            fields = lines[i].split()
            fields[rng.randrange(len(fields))] = value
            out = lines.copy()
            out[i] = " ".join(fields) + "\n"
            yield f"{name}-value{k}", "".join(out).encode("latin-1", "replace"), ".swf"
        for k in range(4):  # field counts
            i = rng.choice(jobs)
            fields = lines[i].split()
            fields = fields[: rng.randrange(len(fields))] if k % 2 else [*fields, "7"] * (1 + k // 2)
            out = lines.copy()
            out[i] = " ".join(fields) + "\n"
            yield f"{name}-count{k}", "".join(out).encode("latin-1"), ".swf"
        for k, header in enumerate(HUGE_HEADERS):
            yield f"{name}-header{k}", (header + text).encode("latin-1"), ".swf"
        raw = text.encode("latin-1")
        for k in range(3):  # truncated anywhere, binary bytes inserted
            yield f"{name}-cut{k}", raw[: rng.randrange(len(raw))], ".swf"
            at = rng.randrange(len(raw))
            yield f"{name}-binary{k}", raw[:at] + bytes(rng.randrange(256) for _ in range(16)) + raw[at:], ".swf"
        yield f"{name}-utf16", text.encode("utf-16"), ".swf"
        yield f"{name}-utf8bom", b"\xef\xbb\xbf" + text.encode("utf-8"), ".swf"
        packed = gzip.compress(raw)
        yield f"{name}-gz", packed, ".swf.gz"
        for k in range(3):  # truncated and corrupt gzip; a plain file named .gz
            yield f"{name}-gzcut{k}", packed[: rng.randrange(2, len(packed))], ".swf.gz"
            bad = bytearray(packed)
            for _ in range(4):
                bad[rng.randrange(10, len(bad))] ^= 1 << rng.randrange(8)
            yield f"{name}-gzflip{k}", bytes(bad), ".swf.gz"
        yield f"{name}-notgz", raw, ".swf.gz"


MUTANTS = list(_mutants())


def _summary(w: Workload) -> tuple[object, ...]:
    return (w.jobs, w.dropped, w.records, w.max_procs, w.header, w.notes)


def _same_answer(path: Path) -> None:
    """Both engines agree: the same SwfError message, or the same workload; nothing else raised."""
    answers: list[object] = []
    for read in (read_swf, read_swf_python):
        try:
            answers.append(_summary(read(path)))
        except SwfError as exc:
            assert str(path) in str(exc)
            answers.append(("error", str(exc)))
    assert answers[0] == answers[1]


def test_corpus_is_not_trivial() -> None:
    assert len(MUTANTS) > 100


@pytest.mark.timeout(120)
def test_mutation_corpus_both_engines_agree_and_memory_is_bounded(tmp_path: Path) -> None:
    for key, data, suffix in MUTANTS:
        path = tmp_path / f"{key}{suffix}"
        path.write_bytes(data)
        tracemalloc.start()
        try:
            _same_answer(path)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # Jobs and arrays are proportional to the file; nothing may follow a value in it.
        assert peak < 5_000_000 + 2_000 * len(data), (key, peak)
        path.unlink()


TOKENS = st.one_of(
    st.integers(-3, 10_000).map(str),
    st.sampled_from(BAD_VALUES),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(2**70), 2**70).map(str),
    st.integers(2**62, 2**70).map(str),  # around the int64 limit (hypothesis favours small integers)
    st.integers(2**62, 2**70).map(lambda n: str(-n)),
)
BASE_ROW = ["1", "0", "0", "100", "4", "-1", "-1", "4", "200", "-1", "1", "1", "1", "-1", "1", "-1", "-1", "-1"]


@st.composite
def _near_valid_rows(draw: st.DrawFn) -> list[str]:
    """A well-formed row with one or two fields replaced (the rows the fast engine would accept)."""
    row = list(BASE_ROW)
    row[0] = str(draw(st.integers(1, 10**6)))
    for _ in range(draw(st.integers(1, 2))):
        row[draw(st.integers(0, 17))] = draw(TOKENS)
    return row


LINES = st.lists(
    st.one_of(
        _near_valid_rows(),
        st.lists(TOKENS, min_size=18, max_size=18),
        st.lists(TOKENS, min_size=0, max_size=20),
        st.just(["; MaxProcs:", "1000000000000"]),
    ),
    max_size=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=LINES)
def test_generated_lines_both_engines_agree(tmp_path: Path, rows: list[list[str]]) -> None:
    path = tmp_path / "gen.swf"
    path.write_bytes("".join(" ".join(r) + "\n" for r in rows).encode("latin-1", "replace"))
    _same_answer(path)
