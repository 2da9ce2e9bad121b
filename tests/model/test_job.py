"""Job.copy: every field copied, changes applied, ``attrs`` not shared, unknown fields refused."""

from __future__ import annotations

import dataclasses

import pytest

from metasched.model.job import Job


def _distinct_job() -> Job:
    """A job whose every field differs from its default (so a field left out of ``copy`` shows)."""
    values: dict[str, object] = {}
    for k, f in enumerate(dataclasses.fields(Job)):
        if f.name == "attrs":
            values[f.name] = {"licences": ["x"]}
        elif f.type in ("int", int):
            values[f.name] = 1000 + k
        else:
            values[f.name] = 1000.5 + k
    return Job(**values)  # type: ignore[arg-type]


def test_copy_keeps_every_field_and_applies_changes() -> None:
    job = _distinct_job()
    same = job.copy()
    assert dataclasses.asdict(same) == dataclasses.asdict(job)
    assert all(getattr(same, f.name) != f.default for f in dataclasses.fields(Job) if f.name != "attrs")
    assert same.attrs is not job.attrs
    changed = job.copy(run_time=1.0, home_site=2)
    assert (changed.run_time, changed.home_site) == (1.0, 2)
    assert dataclasses.asdict(changed) == {**dataclasses.asdict(job), "run_time": 1.0, "home_site": 2}


def test_copy_refuses_unknown_fields() -> None:
    with pytest.raises(TypeError, match="no field 'runtime'"):
        _distinct_job().copy(runtime=3.0)
