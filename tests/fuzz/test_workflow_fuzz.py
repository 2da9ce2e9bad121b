"""Fuzzing workflow files and ``submit`` options (issue 33).

The assertion for every input: a :class:`StoreError` (one line, naming the file or the option) or
specs that hold exactly what was written (text as text, whole numbers within the store's columns,
finite times) and that the store accepts; never another exception, never a hang (pytest-timeout),
never memory that grows with a value or with alias expansion (tracemalloc).
"""

from __future__ import annotations

import math
import random
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metasched.runtime.metaqueue.records import JobSpec, StoreError
from metasched.runtime.metaqueue.workflow import MAX_INT, MAX_SECONDS, read_workflow, submit_spec

GUIDE_YAML = """\
- name: prep
  command: ./prepare.sh input.dat
  cpus: 4
  mem: 8G
  time: 30m
- name: run1
  command: ./simulate --part 1
  after: [prep]
  params: {n: 1000}
- name: run2
  command: ./simulate --part 2
  after: [prep]
  env: {OMP_NUM_THREADS: 4}
- name: merge
  command: ./merge.sh
  after: [run1, run2]
  licences: [matlab]
  deadline: 2h
  user_class: gold
"""
GUIDE_TRELLIS = """\
./mqsub.py -l 3200 -c "Bin/run.it 3 2 0 0 0 0 >& Results/3200.00"
./mqsub.py -deps "0022 0031" -l 2210 -c "Bin/run.it 2 2 1 0 >& Results/2210"
"""
# YAML spellings of other types, anchors and aliases, nesting: substituted for a value.
YAML_VALUES = [
    "abc",
    ".nan",
    ".NaN",
    ".inf",
    "-.inf",
    "true",
    "yes",
    "no",
    "null",
    "~",
    "1.5",
    "0",
    "-1",
    "0x10",
    "0o17",
    "0022",
    "99999999999999999999",
    "-99999999999999999999",
    "1e400",
    "'1:-30'",
    "'1:75'",
    "''",
    "[]",
    "{}",
    "[1, 2]",
    "{a: 1}",
    "!!binary aGVsbG8=",
    "2001-12-14",
    "&x abc",
    "*x",
    "[[[[[[]]]]]]",
    "'\\x00'",
    '"\\0"',
    "!!python/object:os.system ls",
]
KEYS = ["name", "command", "cpus", "mem", "time", "after", "env", "licences", "deadline", "max_attempts",
        "user_class", "params", "cwd", "licenses"]  # fmt: skip


def _accepted_specs_are_what_was_written(specs: list[JobSpec]) -> None:
    for s in specs:
        s.validate()
        assert isinstance(s.command, str) and s.command.strip()
        assert s.name is None or (isinstance(s.name, str) and not s.name.isdigit())
        assert isinstance(s.cpus, int) and not isinstance(s.cpus, bool) and 1 <= s.cpus <= MAX_INT
        assert isinstance(s.mem_mb, int) and 0 <= s.mem_mb <= MAX_INT
        assert math.isfinite(s.time_s) and 0 <= s.time_s <= MAX_SECONDS
        assert s.deadline_s is None or 0 < s.deadline_s <= MAX_SECONDS
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in s.env.items())
        assert all(k.strip() and 1 <= v <= MAX_INT for k, v in s.licences.items())
        assert all(isinstance(a, str) and a for a in s.after)


def _read(path: Path) -> None:
    try:
        specs = read_workflow(path)
    except StoreError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return
    _accepted_specs_are_what_was_written(specs)


def _mutants(seed: int = 34) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    out: list[tuple[str, bytes]] = []
    lines = GUIDE_YAML.splitlines(keepends=True)
    values = [i for i, ln in enumerate(lines) if ":" in ln]
    for k, value in enumerate(YAML_VALUES):
        for _ in range(3):
            i = rng.choice(values)
            key = lines[i].split(":")[0]
            mutated = lines.copy()
            mutated[i] = f"{key}: {value}\n"
            out.append((f"value{k}", "".join(mutated).encode()))
    raw = GUIDE_YAML.encode()
    for k in range(40):  # truncations, byte flips, inserted bytes, wrong encodings
        out.append((f"cut{k}", raw[: rng.randrange(len(raw))]))
        flipped = bytearray(raw)
        flipped[rng.randrange(len(raw))] = rng.randrange(256)
        out.append((f"flip{k}", bytes(flipped)))
    out.append(("utf16", GUIDE_YAML.encode("utf-16")))
    out.append(("latin1", GUIDE_YAML.replace("prep", "pr\u00e9p").encode("latin-1")))
    for k in range(20):
        t = GUIDE_TRELLIS.encode()
        out.append((f"trellis{k}", t[: rng.randrange(len(t))] + bytes([rng.randrange(32, 127)]) + t))
    return out


@pytest.mark.timeout(120)
def test_mutation_corpus_is_refused_or_read_as_written(tmp_path: Path) -> None:
    for key, data in _mutants():
        path = tmp_path / f"{key}.yaml"
        path.write_bytes(data)
        tracemalloc.start()
        try:
            _read(path)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 5_000_000, (key, peak)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("levels", [4, 6, 8, 12])
def test_alias_expansion_is_bounded(tmp_path: Path, levels: int) -> None:
    """The billion laughs at growing depth: refused, with memory and time that do not grow with it."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    for field in ("command", "env", "after", "inputs"):
        path = tmp_path / f"bomb{levels}{field}.yaml"
        path.write_text("\n".join(lines) + f"\njobs: [{{name: a, command: x, {field}: *a{levels}}}]\n")
        tracemalloc.start()
        try:
            with pytest.raises(StoreError):
                read_workflow(path)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 5_000_000


def _yaml_value() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(-(2**80), 2**80),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=20),
        st.sampled_from(["10m", "1:30", "1:-30", "4G", "512M", "a,b:2", "", " ", "0", "12", "x=1", "\x00"]),
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8,
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.dictionaries(st.sampled_from(KEYS), _yaml_value(), max_size=6), max_size=4))
def test_generated_entries_are_refused_or_read_as_written(tmp_path: Path, entries: list[dict[str, Any]]) -> None:
    path = tmp_path / "gen.yaml"
    path.write_text(yaml.safe_dump(entries, allow_unicode=True))
    _read(path)


@settings(max_examples=200, deadline=None)
@given(
    options=st.fixed_dictionaries(
        {},
        optional={
            "name": st.one_of(st.text(max_size=8), st.sampled_from(["123", ""])),
            "after": st.lists(st.text(max_size=5), max_size=3),
            "cpus": st.integers(-(2**70), 2**70),
            "mem": st.one_of(st.text(max_size=8), st.sampled_from(["1e400", "nan", "4G", "-1", "99999999999T"])),
            "time": st.one_of(st.text(max_size=8), st.sampled_from(["1:-30", "nan", "inf", "1:00:00", "9" * 30])),
            "deadline": st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["0", "1h"])),
            "licences": st.lists(st.text(max_size=8), max_size=3),
            "params": st.lists(st.text(max_size=8), max_size=3),
            "user_class": st.text(max_size=8),
            "max_attempts": st.integers(-(2**70), 2**70),
        },
    ),
    command=st.text(max_size=10),
)
def test_generated_submit_options_are_refused_or_taken_as_given(options: dict[str, Any], command: str) -> None:
    try:
        spec = submit_spec(command, "/tmp", **options)
    except StoreError as exc:
        assert "\n" not in str(exc)
        return
    _accepted_specs_are_what_was_written([spec])
