"""Bad SWF input (issue 33): every malformed file gives one SwfError naming the file (and the line
when there is one); both engines read every file the same way; values in the input never size an
allocation."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from metasched.workload.info import describe
from metasched.workload.swf import SwfError, read_swf, read_swf_python

LINE = "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"


def _both(path: Path) -> list[str]:
    """The SwfError message of each engine (the test fails if either raises anything else)."""
    out = []
    for read in (read_swf, read_swf_python):
        with pytest.raises(SwfError) as info:
            read(path)
        assert str(path) in str(info.value)
        out.append(str(info.value))
    return out


def test_truncated_gzip_is_an_swf_error(tmp_path: Path) -> None:
    full = tmp_path / "t.swf.gz"
    with gzip.open(full, "wt") as fh:
        fh.write("".join(LINE.replace("1 0 0", f"{i} {i} 0", 1) for i in range(1, 2000)))
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    fast, slow = _both(cut)
    assert "truncated" in fast.split(str(cut))[1] and fast == slow


def test_corrupt_gzip_is_an_swf_error(tmp_path: Path) -> None:
    good = gzip.compress(LINE.encode() * 50)
    bad = bytearray(good)
    for i in range(12, len(bad) - 8):
        bad[i] ^= 0x5A
    path = tmp_path / "bad.swf.gz"
    path.write_bytes(bytes(bad))
    fast, _ = _both(path)
    assert "gzip" in fast.split(str(path))[1]


def test_non_gzip_dot_gz_is_an_swf_error(tmp_path: Path) -> None:
    path = tmp_path / "plain.swf.gz"
    path.write_text(LINE)
    (msg, _) = _both(path)
    assert "gzip" in msg.split(str(path))[1]


def test_binary_file_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bin.swf"
    path.write_bytes(b"\x00\x01\x02\xff\xfe" * 40 + b"\n")
    fast, slow = _both(path)
    assert fast == slow
    assert f"{path}:1:" in fast and "binary" in fast.split(f"{path}:1:")[1]


def test_utf16_file_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "u16.swf"
    path.write_bytes(LINE.encode("utf-16"))
    fast, slow = _both(path)
    assert fast == slow and f"{path}:1:" in fast


@pytest.mark.parametrize("value", ["9223372036854775808", "1e19", "-1e19", "99999999999999999999999"])
@pytest.mark.parametrize("column", [0, 4, 10, 11, 16])
def test_integers_beyond_int64_are_refused_by_both_engines(tmp_path: Path, value: str, column: int) -> None:
    fields = LINE.split()
    fields[column] = value
    if column == 4:
        fields[7] = value
    path = tmp_path / "big.swf"
    path.write_text(" ".join(fields) + "\n")
    fast, slow = _both(path)
    assert fast == slow and f"{path}:1:" in fast


def test_underscore_digits_are_not_numbers(tmp_path: Path) -> None:
    path = tmp_path / "u.swf"
    path.write_text(LINE.replace(" 100 ", " 1_00 "))
    fast, slow = _both(path)
    assert fast == slow and "1_00" in fast


def test_empty_trace_describes_as_no_jobs(tmp_path: Path) -> None:
    path = tmp_path / "empty.swf"
    path.write_text("; MaxProcs: 8\n")
    w = read_swf(path)
    d = describe(w)
    assert d["jobs"] == 0
    # JSON-ready: no NaN anywhere (json.dumps would write the invalid token NaN)
    import json

    json.loads(json.dumps(d, allow_nan=False))


def test_huge_machine_size_does_not_allocate_per_processor(tmp_path: Path) -> None:
    import tracemalloc

    from metasched.sim.site import SiteState

    tracemalloc.start()
    try:
        SiteState(10**12)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


@pytest.mark.parametrize("key", ["fcfs", "easy", "conservative"])
def test_simulating_a_huge_machine_does_not_allocate_per_processor(tmp_path: Path, key: str) -> None:
    """``; MaxProcs: 1000000000000`` in a header: the simulation's memory does not grow with it."""
    import tracemalloc

    from metasched.policy.local import REGISTRY
    from metasched.sim.replay import simulate

    path = tmp_path / "huge.swf"
    rows = [f"{i} {i * 10} 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1" for i in range(1, 30)]
    path.write_text("; MaxProcs: 1000000000000\n" + "\n".join(rows) + "\n")
    w = read_swf(path)
    assert w.max_procs == 10**12
    small = simulate(w.jobs, 64, REGISTRY[key]())  # warm (compiles kernels) and the same schedule
    tracemalloc.start()
    try:
        schedule = simulate(w.jobs, w.max_procs, REGISTRY[key]())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000
    assert list(schedule.start_time) == list(small.start_time)


@pytest.mark.parametrize("key", ["fcfs", "easy", "conservative"])
def test_simulating_huge_times_does_not_allocate_per_second(tmp_path: Path, key: str) -> None:
    import tracemalloc

    from metasched.policy.local import REGISTRY
    from metasched.sim.replay import simulate

    path = tmp_path / "long.swf"
    big = 10**15
    rows = [f"{i} {i * big} 0 {big} {1 + i % 8} -1 -1 {1 + i % 8} {big} -1 1 1 1 -1 1 -1 -1 -1" for i in range(1, 30)]
    path.write_text("; MaxProcs: 8\n" + "\n".join(rows) + "\n")
    jobs = read_swf(path).jobs
    simulate(jobs, 8, REGISTRY[key]())  # warm
    tracemalloc.start()
    try:
        schedule = simulate(jobs, 8, REGISTRY[key]())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000 and schedule.is_complete


def test_utf8_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bom.swf"
    path.write_bytes(b"\xef\xbb\xbf; MaxProcs: 8\n" + LINE.encode())
    for read in (read_swf, read_swf_python):
        w = read(path)
        assert w.max_procs == 8 and len(w.jobs) == 1
