"""Fixtures for the remote-site tests: the project's own SSH test hosts (``scripts/testbed/sshd.sh``).

The hosts are real OpenSSH servers: ``lo`` on 127.0.0.1 and ``msa``/``msb`` in network namespaces linked
by veth pairs. Tests that use ``msa`` or ``msb`` (some cut their links) hold :func:`netns_lock`, so two
xdist workers never see each other's cuts.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from metasched.runtime.remote.ssh import SshRunner, SshTarget

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "testbed" / "sshd.sh"


@dataclass(frozen=True)
class SshTestbed:
    """What ``sshd.sh`` wrote to ``hosts.json``."""

    data: dict[str, Any]

    @property
    def dir(self) -> Path:
        return Path(self.data["dir"])

    @property
    def user(self) -> str:
        return str(self.data["user"])

    @property
    def home(self) -> Path:
        return Path(self.data["home"])

    def target(self, name: str, **overrides: Any) -> SshTarget:
        host = self.data["hosts"][name]
        kwargs: dict[str, Any] = {
            "host": host["host"],
            "port": host["port"],
            "user": self.user,
            "identity_file": Path(self.data["key"]),
            "known_hosts": Path(self.data["known_hosts"]),
            "host_key_policy": "yes",
            "ssh_config": self.data["ssh_config"],
            "connect_timeout_s": 3.0,
            "keepalive_s": 1,
        }
        kwargs.update(overrides)
        return SshTarget(**kwargs)

    def has(self, name: str) -> bool:
        return name in self.data["hosts"]


def _start() -> Path:
    preset = os.environ.get("METASCHED_SSH_TESTBED")
    if preset and Path(preset).is_file():
        return Path(preset)
    if os.geteuid() != 0:
        pytest.skip("SSH testbed: needs root to start sshd and network namespaces (or set METASCHED_SSH_TESTBED)")
    if shutil.which("bash") is None:
        pytest.skip("SSH testbed: bash is missing")
    lock_path = Path("/tmp/metasched-sshd-testbed.lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(["bash", str(SCRIPT), "all"], capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        pytest.skip(f"SSH testbed: sshd could not start: {(proc.stderr or proc.stdout).strip()[-400:]}")
    return Path(os.environ.get("SSH_TESTBED_DIR", "/tmp/testbed/ssh")) / "hosts.json"


@pytest.fixture(scope="session")
def ssh_testbed() -> SshTestbed:
    """The running SSH test hosts (started on first use; skipped with a reason when impossible)."""
    return SshTestbed(json.loads(_start().read_text()))


@pytest.fixture
def lo_runner(ssh_testbed: SshTestbed) -> Iterator[SshRunner]:
    """A runner to the loopback host (control socket in its own short private directory)."""
    runner = SshRunner(ssh_testbed.target("lo"))
    yield runner
    runner.dispose()


@pytest.fixture
def remote_dir(lo_runner: SshRunner) -> Iterator[str]:
    """A fresh directory on the loopback host, owned by the test user."""
    path = lo_runner.run("mktemp -d", check=True).stdout.strip()
    yield path
    lo_runner.run(["rm", "-rf", path])


@dataclass(frozen=True)
class RestrictedKey:
    """A placeholder key confined on the loopback host to the gateway, which relays to ``url``."""

    key: Path
    line: str
    url: str
    site: str


@contextmanager
def restricted_key(ssh_testbed: SshTestbed, url: str, token: str, *, site: str = "A") -> Iterator[RestrictedKey]:
    """Install a fresh restricted key for the test user (gateway copied where that user can read it)."""
    from metasched.runtime.remote import gateway
    from metasched.runtime.remote.keys import authorized_keys_line, gateway_command, generate_keypair

    work = Path(tempfile.mkdtemp(prefix="gw-", dir=ssh_testbed.dir))
    work.chmod(0o755)
    try:
        shutil.copy(gateway.__file__, work / "gateway.py")
        (work / "gateway.py").chmod(0o644)
        token_file = work / "token"
        token_file.write_text(token + "\n")
        token_file.chmod(0o644)  # read by the test user's forced command
        keys = Path(tempfile.mkdtemp(prefix="key-"))
        pub = generate_keypair(keys / "ph")
        command = gateway_command(
            url=url, token_file=token_file, site=site, python="/usr/bin/python3", gateway=work / "gateway.py"
        )
        line = authorized_keys_line(pub.read_text(), command)
        auth = ssh_testbed.dir / "auth" / ssh_testbed.user
        with _auth_lock(), open(auth, "a") as fh:
            fh.write(line + "\n")
        try:
            yield RestrictedKey(keys / "ph", line, url, site)
        finally:
            with _auth_lock():
                kept = [ln for ln in auth.read_text().splitlines() if ln != line]
                auth.write_text("".join(ln + "\n" for ln in kept))
            shutil.rmtree(keys, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def _auth_lock() -> Iterator[None]:
    with open("/tmp/metasched-sshd-auth.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def netns_lock() -> Iterator[None]:
    """Exclusive use of the namespaced hosts ``msa``/``msb`` (their links may be cut by the holder)."""
    with open("/tmp/metasched-sshd-netns.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
