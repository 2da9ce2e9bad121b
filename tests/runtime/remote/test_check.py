"""``sites check`` verdicts, on this machine (local runner) and over SSH."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasched.runtime.remote.check import check_site
from metasched.runtime.remote.runner import LocalRunner
from metasched.runtime.remote.ssh import SshRunner

from .conftest import SshTestbed


def test_local_site_all_good(tmp_path: Path) -> None:
    items = check_site(
        LocalRunner(),
        "local",
        workdir=str(tmp_path / "ph"),
        extra_commands=["sh"],
        test_placeholder=lambda: (True, "ran in 0.1 s"),
    )
    assert [(i.name, i.ok) for i in items] == [
        ("reachable", True),
        ("batch commands", True),
        ("workdir writable", True),
        ("test placeholder", True),
    ]
    assert "sh=/" in items[1].detail


def test_missing_commands_and_unwritable_workdir_are_reported(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.write_text("a file, not a directory")
    ran = []
    items = check_site(
        LocalRunner(),
        "local",
        workdir=str(ro / "sub"),
        extra_commands=["sh", "no-such-command-xyz"],
        python="/no/such/python",
        test_placeholder=lambda: ran.append(1) or (True, ""),
    )
    verdicts = {i.name: i for i in items}
    assert not verdicts["batch commands"].ok and verdicts["batch commands"].detail == "missing: no-such-command-xyz"
    assert not verdicts["workdir writable"].ok
    assert not verdicts["placeholder python"].ok
    assert "test placeholder" not in verdicts and ran == []  # not tried on a site already known broken


def test_a_failing_test_placeholder_is_a_verdict_not_a_crash() -> None:
    def boom() -> tuple[bool, str]:
        raise RuntimeError("sbatch: error: invalid partition")

    items = check_site(LocalRunner(), "local", test_placeholder=boom)
    assert items[-1].name == "test placeholder" and not items[-1].ok and "invalid partition" in items[-1].detail


def test_unknown_adapter() -> None:
    with pytest.raises(ValueError, match="unknown adapter 'lsf'"):
        check_site(LocalRunner(), "lsf")


@pytest.mark.live
def test_over_ssh(lo_runner: SshRunner, ssh_testbed: SshTestbed) -> None:
    items = check_site(lo_runner, "local", workdir=f"{ssh_testbed.home}/ph", python="/usr/bin/python3")
    verdicts = {i.name: i for i in items}
    assert verdicts["reachable"].ok and f"as {ssh_testbed.user}" in verdicts["reachable"].detail
    assert verdicts["workdir writable"].ok
    # metasched is not installed for the test user's system python: reported, with the reason.
    assert not verdicts["placeholder python"].ok and "metasched" in verdicts["placeholder python"].detail


@pytest.mark.live
def test_unreachable_over_ssh(ssh_testbed: SshTestbed) -> None:
    runner = SshRunner(ssh_testbed.target("lo", port=1))
    try:
        items = check_site(runner, "slurm")
    finally:
        runner.dispose()
    assert [(i.name, i.ok) for i in items] == [("reachable", False)]
    assert "refused" in items[0].detail
