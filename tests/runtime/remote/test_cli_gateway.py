"""``metasched ssh-gateway`` passes its options and SSH_ORIGINAL_COMMAND to the gateway."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .relay_server import relay_server

SRC = Path(__file__).resolve().parents[3] / "src"


def test_cli_gateway_relays(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("tk-0123456789abcdef")
    with relay_server("tk-0123456789abcdef") as server:
        env = {**os.environ, "PYTHONPATH": str(SRC), "SSH_ORIGINAL_COMMAND": "metasched heartbeat placeholder_id=p9"}
        argv = [sys.executable, "-m", "metasched", "ssh-gateway", "--url", server.url, "--token-file", str(token)]
        res = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL
        )
        assert res.returncode == 0, res.stderr
        assert server.requests == [("/v1/heartbeat", {"placeholder_id": "p9"})]
        env["SSH_ORIGINAL_COMMAND"] = "bash"
        res = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL
        )
        assert res.returncode == 2 and "not allowed" in res.stderr
