"""The placeholder protocol over SSH: :class:`SshTransport`, a drop-in for the HTTP transport.

Same requests, same answers, same errors as :class:`~metasched.runtime.metaqueue.protocol.HttpTransport`
(it reuses that class's encoding and only replaces how a request travels): the body goes to the
gateway on the metaqueue host through :class:`~metasched.runtime.remote.client.SshProtocolClient`,
which relays it to the server's HTTP API. So exactly-once claims, leases and WAIT/EXIT are the
server's, whatever the transport.
"""

from __future__ import annotations

from typing import Any

from metasched.runtime.metaqueue.protocol import HttpTransport
from metasched.runtime.remote.client import Mode, SshProtocolClient
from metasched.runtime.remote.ssh import SshTarget


class SshTransport(HttpTransport):
    """``ssh METAQUEUE_HOST metasched <verb>`` (seed 003, section 3), one long session by default."""

    def __init__(self, target: SshTarget, *, mode: Mode = "session", timeout_s: float = 30.0) -> None:
        # No HTTP client: requests go through the SSH client instead (see _post).
        self.ssh = SshProtocolClient(target, mode=mode, timeout_s=timeout_s)

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        return self.ssh.call(path.rsplit("/", 1)[-1], body)

    def bound(self, timeout_s: float) -> None:
        self.ssh.timeout_s = min(self.ssh.timeout_s, timeout_s)

    def close(self) -> None:
        self.ssh.close()
