"""The Trellis transport end to end: a restricted key, real sshd, the gateway as forced command."""

from __future__ import annotations

import subprocess

import pytest

from metasched.runtime.remote.client import MODES, SshProtocolClient

from .conftest import SshTestbed, restricted_key
from .relay_server import relay_server

pytestmark = pytest.mark.live


def test_claim_over_ssh_reaches_the_server_and_nothing_else_is_allowed(ssh_testbed: SshTestbed) -> None:
    with (
        relay_server("tok-0123456789abcdef") as server,
        restricted_key(ssh_testbed, server.url, "tok-0123456789abcdef", site="A") as rk,
    ):
        target = ssh_testbed.target("lo", identity_file=rk.key)
        for mode in MODES:
            client = SshProtocolClient(target, mode=mode, timeout_s=10)  # type: ignore[arg-type]
            try:
                server.answer = {"action": "run", "jobs": [{"job_id": 3, "attempt": 1}]}
                assert client.call("claim", {"placeholder_id": "A-p1", "cpus": 1}) == server.answer
                assert server.requests[-1] == ("/v1/claim", {"placeholder_id": "A-p1", "cpus": 1, "site": "A"})
                server.answer = {"held": {"3": 1}}
                assert client.call("heartbeat", {"placeholder_id": "A-p1"}) == {"held": {"3": 1}}
                with pytest.raises(PermissionError, match="site 'A' only"):
                    client.call("claim", {"placeholder_id": "A-p1", "site": "B"})
                with pytest.raises(PermissionError, match="placeholders of site 'A' only"):
                    client.call("heartbeat", {"placeholder_id": "B-p7"})
                server.status = 503
                with pytest.raises(ConnectionError, match="server error 503"):
                    client.call("bye", {"placeholder_id": "A-p1"})
                server.status = 200
                # The gateway stays up across requests in a session; a new request after an error still works.
                assert client.call("heartbeat", {"placeholder_id": "A-p1"}) == server.answer
            finally:
                client.close()
        n = len(server.requests)
        # The key runs no shell and forwards no port, whatever the client asks for.
        ssh = ["ssh", *target.options_argv(), "-p", str(target.port), target.destination]
        shell = subprocess.run([*ssh, "id"], capture_output=True, text=True, timeout=20, check=False)
        assert shell.returncode == 2 and "verb 'id' not allowed" in shell.stderr and shell.stdout == ""
        login = subprocess.run(ssh, capture_output=True, text=True, timeout=20, check=False, stdin=subprocess.DEVNULL)
        assert login.returncode == 2 and "no shell" in login.stderr
        fwd = subprocess.run(
            [*ssh, "-W", f"127.0.0.1:{target.port}"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert fwd.returncode == 255 and "forwarding failed" in fwd.stderr
        # Control: the same request with the user's own (unrestricted) key is forwarded.
        own = ssh_testbed.target("lo")
        ok = subprocess.run(
            ["ssh", *own.options_argv(), "-p", str(own.port), own.destination, "-W", f"127.0.0.1:{own.port}"],
            capture_output=True,
            timeout=20,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert ok.stdout.startswith(b"SSH-2.0-")
        assert fwd.returncode != 0
        assert len(server.requests) == n
