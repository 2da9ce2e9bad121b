"""The restricted key's authorized_keys line and key generation."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from metasched.runtime.remote.keys import authorized_keys_line, gateway_command, generate_keypair, parse_public_key

PUB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO1uS3yhpGqUK6V6cwyEaeCgcO7xSK8+TBDSwj9K2nFW someone@host"


def test_line_restricts_and_forces_the_command() -> None:
    cmd = gateway_command(
        url="http://127.0.0.1:8765",
        token_file="/home/u/.metasched/token",
        site="A",
        python="/usr/bin/python3",
        gateway="/opt/ms/gateway.py",
    )
    line = authorized_keys_line(PUB, cmd, from_hosts=["10.0.0.0/8", "*.cluster.org"])
    assert line.startswith('restrict,command="/usr/bin/python3 -I -S /opt/ms/gateway.py --url http://127.0.0.1:8765 ')
    assert 'from="10.0.0.0/8,*.cluster.org"' in line
    assert line.count("command=") == 1
    assert line.endswith(
        " ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO1uS3yhpGqUK6V6cwyEaeCgcO7xSK8+TBDSwj9K2nFW metasched-placeholder"
    )
    assert shlex.split(cmd)[-4:] == ["--site", "A", "--timeout", "30"]


def test_quotes_in_the_command_are_escaped() -> None:
    line = authorized_keys_line(PUB, 'echo "hi" \\ there')
    assert 'command="echo \\"hi\\" \\\\ there"' in line


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"public_key": "not a key"}, "not an OpenSSH public key"),
        ({"public_key": "ssh-ed25519 !!!"}, "not an OpenSSH public key"),
        ({"command": "a\nb"}, "one line"),
        ({"from_hosts": ['x" ,command="sh']}, "bad from="),
    ],
)
def test_bad_input_is_refused(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"public_key": PUB, "command": "true", **kwargs}
    with pytest.raises(ValueError, match=message):
        authorized_keys_line(**args)  # type: ignore[arg-type]


def test_generate_keypair_once(tmp_path: Path) -> None:
    pub = generate_keypair(tmp_path / "keys" / "ph")
    text = pub.read_text()
    assert parse_public_key(text).startswith("ssh-ed25519 ")
    assert (tmp_path / "keys" / "ph").stat().st_mode & 0o777 == 0o600
    assert generate_keypair(tmp_path / "keys" / "ph").read_text() == text  # kept, not replaced
    assert generate_keypair(tmp_path / "keys" / "ph", overwrite=True).read_text() != text
