"""SSH destination parsing and the options handed to OpenSSH (no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasched.runtime.remote.ssh import SshRunner, SshTarget


def _opts(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-o")


def test_from_mapping_resolves_paths_and_builds_options(tmp_path: Path) -> None:
    t = SshTarget.from_mapping(
        {
            "host": "login.example.org",
            "user": "alice",
            "port": 2222,
            "key": "keys/id",
            "jump": "bob@gw:22",
            "known_hosts": "/etc/ms/known_hosts",
            "host_key_policy": "yes",
            "options": {"Compression": "yes"},
        },
        base_dir=tmp_path,
    )
    assert t.identity_file == tmp_path / "keys" / "id"
    assert (t.destination, t.label) == ("alice@login.example.org", "alice@login.example.org:2222")
    argv = t.options_argv()
    assert argv[argv.index("-i") + 1] == str(tmp_path / "keys" / "id")
    assert argv[argv.index("-J") + 1] == "bob@gw:22"
    opts = _opts(argv)
    assert opts["BatchMode"] == "yes"
    assert opts["StrictHostKeyChecking"] == "yes"
    assert opts["UserKnownHostsFile"] == "/etc/ms/known_hosts"
    assert opts["IdentitiesOnly"] == "yes"
    assert opts["Compression"] == "yes"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "'host' is required"),
        ({"host": "h", "colour": "red"}, "unknown key"),
        ({"host": "-oProxyCommand=x"}, "bad host"),
        ({"host": "h", "user": "-x"}, "bad user"),
        ({"host": "h", "port": "22"}, "port must be an integer"),
        ({"host": "h", "port": 70000}, "port must be in"),
        ({"host": "h", "host_key_policy": "maybe"}, "host_key_policy"),
        ({"host": "h", "options": {"Bad Name": "x"}}, "bad option name"),
    ],
)
def test_from_mapping_rejects_bad_input(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SshTarget.from_mapping(data)


def test_runner_makes_a_private_control_directory_and_rejects_long_socket_paths(tmp_path: Path) -> None:
    runner = SshRunner(SshTarget(host="h"))
    try:
        assert runner.control_path.parent.stat().st_mode & 0o777 == 0o700
    finally:
        runner.dispose()
    with pytest.raises(ValueError, match="unix socket limit"):
        SshRunner(SshTarget(host="h"), control_dir=tmp_path / ("x" * 100))
