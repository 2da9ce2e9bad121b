"""``--time`` / ``time:`` in Slurm's forms, a bare number meaning minutes (issue 36 item 4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.workflow import parse_walltime_s, submit_spec


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90 * 60),  # MM: minutes, as sbatch
        (90, 90 * 60),
        (1.5, 90),
        ("5:30", 5 * 60 + 30),  # MM:SS
        ("1:02:03", 3723),  # HH:MM:SS
        ("1-12", 86400 + 12 * 3600),  # D-HH
        ("1-12:30", 86400 + 12 * 3600 + 30 * 60),  # D-HH:MM
        ("2-00:00:01", 2 * 86400 + 1),  # D-HH:MM:SS
        ("0", 0),
        ("90s", 90),
        ("10m", 600),
        ("2h", 7200),
        ("1d", 86400),
    ],
)
def test_slurm_forms(text: object, seconds: float) -> None:
    assert parse_walltime_s(text) == seconds


@pytest.mark.parametrize("bad", ["soon", "1:60", "1:00:60", "1-24", "1-2:60", "1:2:3:4", "-5", "1--2", "", True, None])
def test_bad_time_is_one_clear_error(bad: object) -> None:
    with pytest.raises(StoreError, match="bad time"):
        parse_walltime_s(bad)


@given(st.integers(0, 99), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_days_form_adds_up(d: int, h: int, m: int, s: int) -> None:
    assert parse_walltime_s(f"{d}-{h:02d}:{m:02d}:{s:02d}") == d * 86400 + h * 3600 + m * 60 + s
    assert parse_walltime_s(f"{h}:{m:02d}:{s:02d}") == h * 3600 + m * 60 + s


def test_submit_option_names_itself() -> None:
    assert submit_spec("true", "/", time="90").time_s == 5400
    with pytest.raises(StoreError, match="--time"):
        submit_spec("true", "/", time="1-25")


def test_workflow_time_number_is_minutes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from metasched.runtime.metaqueue.workflow import read_workflow

    f = tmp_path / "wf.yaml"
    f.write_text("- {name: a, command: 'true', time: 90}\n- {name: b, command: 'true', time: '1-00:00:00'}\n")
    a, b = read_workflow(f, default_cwd="/")
    assert (a.time_s, b.time_s) == (5400, 86400)
