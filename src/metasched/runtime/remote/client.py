"""The placeholder's end of the SSH transport: protocol requests to the metaqueue host's gateway over SSH.

Three ways to carry a request (``mode``), all answered by :mod:`metasched.runtime.remote.gateway`:

- ``session`` (default): one ``ssh METAQUEUE_HOST metasched session`` for the placeholder's whole
  life; each request is one JSON line on it. A claim costs a round trip, not a Python start.
- ``mux``: one ``ssh METAQUEUE_HOST metasched <verb>`` per request, as a new channel on a master
  connection the placeholder keeps (ControlMaster; no key exchange per request).
- ``plain``: one ``ssh`` process and connection per request, as Trellis did (seed 003, Figure 4,
  line 18). The slowest; kept as the reference and for hosts that forbid multiplexing.

Errors follow the HTTP transport: :class:`ConnectionError` when the metaqueue cannot be reached
(ssh failed or timed out, the gateway said "unavailable"), retry later; :class:`PermissionError`
when the gateway or the server refused the request. A broken session is reopened once per request.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import time
from typing import IO, Any, Literal

from metasched.runtime.remote.gateway import EXIT_OK, EXIT_REFUSED, VERBS
from metasched.runtime.remote.health import Backoff
from metasched.runtime.remote.runner import CommandError, CommandResult, execute
from metasched.runtime.remote.ssh import SshRunner, SshTarget

Mode = Literal["session", "mux", "plain"]
MODES: tuple[str, ...] = ("session", "mux", "plain")


class SshProtocolClient:
    """Sends protocol requests to the metaqueue host's gateway over SSH (see the module docstring)."""

    def __init__(self, target: SshTarget, *, mode: Mode = "session", timeout_s: float = 30.0) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown SSH transport mode {mode!r}; known: {', '.join(MODES)}")
        self.target = target
        self.mode = mode
        self.timeout_s = timeout_s
        # A short back-off: a placeholder retries within its lease, it must not sit out minutes.
        self._runner = SshRunner(target, backoff=Backoff(base_s=0.5, factor=2.0, max_s=10.0)) if mode == "mux" else None
        self._session: subprocess.Popen[bytes] | None = None
        self._buffer = b""

    def call(self, verb: str, body: dict[str, Any]) -> Any:
        """One request; returns the server's decoded JSON answer."""
        if verb not in VERBS:
            raise ValueError(f"unknown protocol verb {verb!r}; known: {', '.join(VERBS)}")
        if self.mode == "session":
            return self._call_session(verb, body)
        payload = json.dumps(body)
        command = ["metasched", verb]
        try:
            if self._runner is not None:
                result = self._runner.run(command, input=payload, timeout_s=self.timeout_s)
            else:
                result = execute(
                    [*self._ssh_argv(), *command],
                    timeout_s=self.timeout_s,
                    input=payload,
                    target=self.target.label,
                    shown=" ".join(command),
                )
        except CommandError as exc:
            raise ConnectionError(f"metaqueue host unreachable over ssh: {exc}") from exc
        return _decode(result)

    def close(self) -> None:
        """End the session or stop the master connection."""
        if self._session is not None:
            proc, self._session = self._session, None
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._runner is not None:
            self._runner.dispose()

    def __enter__(self) -> SshProtocolClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- session mode ----------------------------------------------------------------------------

    def _ssh_argv(self) -> list[str]:
        t = self.target
        return ["ssh", *t.options_argv(), *(["-p", str(t.port)] if t.port else []), t.destination, "--"]

    def _call_session(self, verb: str, body: dict[str, Any]) -> Any:
        line = (json.dumps({"verb": verb, "body": body}) + "\n").encode()
        for attempt in (1, 2):
            try:
                proc = self._open_session()
                assert proc.stdin is not None
                proc.stdin.write(line)
                proc.stdin.flush()
                reply = self._read_line(proc)
                break
            except (OSError, ConnectionError) as exc:
                self._kill_session()
                if attempt == 2:
                    raise ConnectionError(f"metaqueue session over ssh failed: {exc}") from exc
        try:
            message = json.loads(reply)
        except json.JSONDecodeError:
            raise ConnectionError(f"metaqueue gateway answered non-JSON: {reply[:200]!r}") from None
        status, error = message.get("status"), str(message.get("error") or "")
        if status == EXIT_OK:
            return message.get("answer")
        if status == EXIT_REFUSED:
            raise PermissionError(error)
        raise ConnectionError(error or f"status {status}")

    def _open_session(self) -> subprocess.Popen[bytes]:
        if self._session is not None and self._session.poll() is None:
            return self._session
        self._kill_session()
        self._session = subprocess.Popen(
            [*self._ssh_argv(), "metasched", "session"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._buffer = b""
        return self._session

    def _read_line(self, proc: subprocess.Popen[bytes]) -> bytes:
        stdout: IO[bytes] | None = proc.stdout
        assert stdout is not None
        deadline = time.monotonic() + self.timeout_s
        fd = stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise ConnectionError(f"no answer from the metaqueue session within {self.timeout_s:g} s")
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise ConnectionError(f"the metaqueue session ended (ssh exit {proc.wait()})")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _kill_session(self) -> None:
        if self._session is not None:
            proc, self._session = self._session, None
            proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()


def _decode(result: CommandResult) -> Any:
    if result.returncode == EXIT_OK:
        try:
            return json.loads(result.stdout)
        except json.JSONDecodeError:
            raise ConnectionError(f"metaqueue gateway answered non-JSON: {result.stdout[:200]!r}") from None
    message = result.stderr.strip()[:500] or f"exit {result.returncode}"
    if result.returncode == EXIT_REFUSED:
        raise PermissionError(message)
    raise ConnectionError(message)
