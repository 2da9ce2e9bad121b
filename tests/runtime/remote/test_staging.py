"""Staging: the workflow syntax, and the marker protocol over the local runner (same files, no SSH)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from metasched.runtime.remote.runner import LocalRunner
from metasched.runtime.remote.staging import (
    FINISHED,
    STAGE_FAILED,
    STAGED_IN,
    STAGED_OUT,
    SiteStager,
    StagedFile,
    StageSpec,
    job_dir,
    mark_finished,
    wait_for_marker,
)


def test_workflow_syntax(tmp_path: Path) -> None:
    spec = StageSpec.from_workflow(
        {
            "inputs": ["data/ref.fa", "data/reads-1.fq:reads.fq", {"local": "/abs/x", "remote": "sub/y"}],
            "outputs": ["out.sam", "logs/:results/align-logs/"],
        },
        base_dir=tmp_path,
    )
    assert spec.inputs == (
        StagedFile(str(tmp_path / "data/ref.fa"), "ref.fa"),
        StagedFile(str(tmp_path / "data/reads-1.fq"), "reads.fq"),
        StagedFile("/abs/x", "sub/y"),
    )
    assert spec.outputs == (
        StagedFile(str(tmp_path / "out.sam"), "out.sam"),
        StagedFile(str(tmp_path / "results/align-logs") + "/", "logs/"),
    )
    assert StageSpec.from_json(spec.as_json()) == spec
    assert StageSpec.from_workflow({}).is_empty


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"inputs": {"a": 1}}, "must be a list"),
        ({"inputs": ["x:/etc/passwd"]}, "relative path inside the job directory"),
        ({"outputs": ["../../escape"]}, "relative path inside"),
        ({"inputs": [{"remote": "x"}]}, "needs 'local'"),
        ({"inputs": [3]}, "is not a path"),
    ],
)
def test_workflow_errors(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StageSpec.from_workflow(entry, where="job 'a'")


def test_job_dir_is_per_attempt() -> None:
    assert job_dir("/scratch/ms", 7, 2) == "/scratch/ms/7-2"


def test_marker_protocol_in_order(tmp_path: Path) -> None:
    local = tmp_path / "mq"
    (local / "data").mkdir(parents=True)
    (local / "data" / "in.txt").write_text("3\n")
    spec = StageSpec.from_workflow({"inputs": ["data/in.txt"], "outputs": ["out.txt:results/out.txt"]}, base_dir=local)
    d = job_dir(str(tmp_path / "site"), 1, 1)
    stager = SiteStager(LocalRunner())

    report = stager.sync({d: spec})
    assert report.staged_in == [d] and report.staged_out == []
    assert wait_for_marker(d, STAGED_IN, timeout_s=0) is not None
    # Not finished yet: nothing to do, and the outputs are not fetched early.
    assert stager.sync({d: spec}).staged_out == []
    assert not (local / "results" / "out.txt").exists()
    assert wait_for_marker(d, STAGED_OUT, timeout_s=0.2, poll_s=0.05) is None

    (Path(d) / "out.txt").write_text(str(int((Path(d) / "in.txt").read_text()) * 2))
    mark_finished(d, 0)
    report = stager.sync({d: spec})
    assert report.staged_out == [d]
    assert (local / "results" / "out.txt").read_text() == "6"
    assert wait_for_marker(d, STAGED_OUT, timeout_s=0) is not None
    assert (Path(d) / FINISHED).read_text() == "0\n"
    assert stager.sync({d: spec}).staged_out == []  # done once


def test_missing_output_fails_the_stage_out(tmp_path: Path) -> None:
    spec = StageSpec.from_workflow({"outputs": ["never-written.txt"]}, base_dir=tmp_path / "mq")
    d = job_dir(str(tmp_path / "site"), 2, 1)
    stager = SiteStager(LocalRunner())
    stager.sync({d: spec})
    mark_finished(d, 0)
    report = stager.sync({d: spec})
    assert d in report.failed and "never-written.txt" in report.failed[d]
    assert (Path(d) / STAGE_FAILED).exists()
    assert wait_for_marker(d, STAGED_OUT, timeout_s=5) is None  # returns at once: failed


def test_missing_input_fails_the_stage_in(tmp_path: Path) -> None:
    spec = StageSpec.from_workflow({"inputs": ["nope.txt"]}, base_dir=tmp_path)
    d = job_dir(str(tmp_path / "site"), 3, 1)
    report = SiteStager(LocalRunner()).sync({d: spec})
    assert "does not exist" in report.failed[d]
    assert wait_for_marker(d, STAGED_IN, timeout_s=5) is None


def test_workflow_entry_with_staging_wraps_the_command(tmp_path: Path) -> None:
    from metasched.runtime.metaqueue.workflow import read_workflow
    from metasched.runtime.remote.staging import STAGE_ENV

    (tmp_path / "wf.yaml").write_text(
        "- name: a\n  command: cat in.txt > out.txt\n  inputs: [x/in.txt]\n  outputs: ['out.txt:res/a.txt']\n"
        "- name: b\n  command: 'true'\n"
    )
    a, b = read_workflow(tmp_path / "wf.yaml")
    spec = StageSpec.from_json(a.env[STAGE_ENV])
    assert spec.inputs == (StagedFile(str(tmp_path / "x/in.txt"), "in.txt"),)
    assert "cat in.txt > out.txt" in a.command and STAGED_OUT in a.command
    assert b.command == "true" and STAGE_ENV not in b.env


def test_wrapper_and_stager_together(tmp_path: Path) -> None:
    """The wrapped job (what the placeholder runs) and the site side, as separate processes."""
    import subprocess
    import threading

    from metasched.runtime.remote.staging import STAGE_OUT_FAILED, wrap_command

    (tmp_path / "mq").mkdir()
    (tmp_path / "mq" / "in.txt").write_text("21\n")
    spec = StageSpec.from_workflow({"inputs": ["in.txt"], "outputs": ["out.txt:back.txt"]}, base_dir=tmp_path / "mq")
    env = {
        "METASCHED_JOB_ID": "5",
        "METASCHED_ATTEMPT": "2",
        "METASCHED_STAGE_ROOT": str(tmp_path / "site"),
        "HOME": "/",
    }
    job = subprocess.Popen(
        ["bash", "-c", wrap_command("echo $(( $(cat in.txt) * 2 )) > out.txt", poll_s=0.05)], env=env
    )
    d = job_dir(str(tmp_path / "site"), 5, 2)
    stager = SiteStager(LocalRunner())
    stop = threading.Event()

    def site_manager() -> None:
        while not stop.is_set():
            stager.sync({d: spec})
            time.sleep(0.05)

    thread = threading.Thread(target=site_manager)
    thread.start()
    try:
        assert job.wait(timeout=20) == 0
    finally:
        stop.set()
        thread.join()
    # The wrapper ended only after the output was back.
    assert (tmp_path / "mq" / "back.txt").read_text() == "42\n"
    # A failed stage-in ends the wrapper with STAGE_OUT_FAILED instead of waiting forever.
    env["METASCHED_ATTEMPT"] = "3"
    bad = StageSpec.from_workflow({"inputs": ["missing.txt"]}, base_dir=tmp_path / "mq")
    job = subprocess.Popen(["bash", "-c", wrap_command("true", poll_s=0.05)], env={**env, "PATH": "/usr/bin:/bin"})
    time.sleep(0.2)
    stager.sync({job_dir(str(tmp_path / "site"), 5, 3): bad})
    assert job.wait(timeout=20) == STAGE_OUT_FAILED
