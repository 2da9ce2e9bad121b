"""Workflow files (YAML and Trellis lines), resource strings, and the user CLI on the embedded store."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.workflow import parse_duration_s, parse_licences, parse_mem_mb, read_workflow


def test_resource_strings() -> None:
    assert [parse_mem_mb(v) for v in (512, "512M", "4G", "2048k", "1T", "1.5g")] == [512, 512, 4096, 2, 1048576, 1536]
    assert [parse_duration_s(v) for v in (90, "90s", "10m", "2h", "1:00:00", "1:30", "1d")] == [
        90,
        90,
        600,
        7200,
        3600,
        90,
        86400,
    ]
    assert parse_licences("matlab,abaqus:3") == {"matlab": 1, "abaqus": 3}
    assert parse_licences(["a", "a"]) == {"a": 2}
    for bad, fn in (("lots", parse_mem_mb), ("soon", parse_duration_s), ("1:2:3:4", parse_duration_s)):
        with pytest.raises(StoreError, match="bad"):
            fn(bad)


def test_yaml_workflow(tmp_path: Path) -> None:
    f = tmp_path / "wf.yaml"
    f.write_text(
        "- {name: a, command: 'echo a', cpus: 2, mem: 1G, time: 10m, licences: [matlab]}\n"
        "- {name: b, command: 'echo b', after: a}\n"
        "- {name: c, command: 'echo c', after: [a, b], env: {X: 1}}\n"
    )
    a, b, c = read_workflow(f, default_cwd="/w")
    assert (a.cpus, a.mem_mb, a.time_s, a.licences, a.cwd) == (2, 1024, 600.0, {"matlab": 1}, "/w")
    assert b.after == ["a"] and c.after == ["a", "b"] and c.env == {"X": "1"}
    f.write_text("- {name: a, command: x, colour: red}\n")
    with pytest.raises(StoreError, match=r"jobs\[0\]\.colour: unknown key"):
        read_workflow(f)
    f.write_text("- {name: a}\n")
    with pytest.raises(StoreError, match=r"jobs\[0\]\.command: missing"):
        read_workflow(f)
    f.write_text("name: a\n")
    with pytest.raises(StoreError, match="expected a YAML list"):
        read_workflow(f)


def test_trellis_lines(tmp_path: Path) -> None:
    f = tmp_path / "Makefile.mq"
    f.write_text(
        "# checkers slices (seed 003, figure 9)\n"
        './mqsub.py -l "0031" -c "Bin/run.it 0 0 3 1 > Results/0031"\n'
        './mqsub.py -deps "0022 0031" -l "3200" -c "Bin/run.it 3 2 0 0 0 0 >& Results/3200.00"\n'
        "-l 0022 -c true\n"
    )
    s1, s2, s3 = read_workflow(f)
    # All-digit labels would mean job ids: they become names L<label> (the user guide says so).
    assert (s2.name, s2.after, s2.command) == ("L3200", ["L0022", "L0031"], "Bin/run.it 3 2 0 0 0 0 >& Results/3200.00")
    assert s1.after == [] and s3.name == "L0022"
    f.write_text('-l x -c "a" -q 1\n')
    with pytest.raises(StoreError, match="line 1: unknown flag '-q'"):
        read_workflow(f)


def test_cli_submit_status_cancel_retry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    r = runner.invoke(app, ["submit", "--name", "a", "--cpus", "2", "--time", "5m", "--", "echo", "hi there"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "1"
    r = runner.invoke(app, ["submit", "--name", "b", "--after", "a,zzz", "--", "true"])
    assert r.exit_code == 2 and "unknown dependencies: zzz" in r.output
    wf = tmp_path / "wf.yaml"
    wf.write_text("- {name: x, command: 'true', after: [y]}\n- {name: y, command: 'true', after: [x]}\n")
    r = runner.invoke(app, ["submit-workflow", str(wf)])
    assert r.exit_code == 2 and "dependency cycle" in r.output and "x" in r.output
    wf.write_text("- {name: b, command: 'true', after: [a]}\n")
    assert runner.invoke(app, ["submit-workflow", str(wf)]).exit_code == 0
    r = runner.invoke(app, ["status"])
    assert r.exit_code == 0 and "queued=2" in r.output and "ready=1" in r.output
    r = runner.invoke(app, ["cancel", "a"])
    assert "cancelled 1 job(s): 1" in r.output
    r = runner.invoke(app, ["status", "--state", "dep_failed"])
    assert "dependency a" in r.output.replace("\n", " ").replace("│", " ") or "dep_failed" in r.output
    r = runner.invoke(app, ["retry", "a"])
    assert "requeued 2 job(s)" in r.output
    r = runner.invoke(app, ["logs", "a"])
    assert r.exit_code == 2 and "no output recorded yet" in r.output
    r = runner.invoke(app, ["logs", "nope"])
    assert r.exit_code == 2 and "unknown job(s): nope" in r.output
