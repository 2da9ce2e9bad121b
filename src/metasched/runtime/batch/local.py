"""Placeholders as local processes: the embedded default, so a newcomer needs no cluster."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import ClassVar

from metasched.runtime.batch.base import BatchAdapter, PlaceholderSpec
from metasched.runtime.metaqueue.states import PlaceholderState


class LocalAdapter(BatchAdapter):
    """Each placeholder is a child process in its own session; ``batch_id`` is its pid.

    Native states are the process's: ``running``, exit status ``0`` (done), ``expired`` (the
    agent's own exit status 3 for "wall time used up"), ``signalled`` (killed), other exit codes.
    """

    key: ClassVar[str] = "local"
    STATES: ClassVar[dict[str, PlaceholderState]] = {
        "running": PlaceholderState.RUNNING,
        "exit:0": PlaceholderState.DONE,
        "exit:3": PlaceholderState.EXPIRED,
        "signalled": PlaceholderState.CANCELLED,
        "gone": PlaceholderState.VANISHED,
    }
    EXPIRED_EXIT = 3
    #: A local placeholder holds nothing but a process: an idle one lingers a minute, so that a job submitted
    #: after the last one ended starts at once instead of after a new agent's start-up (~0.4 s of Python).
    LINGER_S: ClassVar[float] = 60.0

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def submit(self, spec: PlaceholderSpec) -> str:
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(spec.env)
        log = open(self.workdir / f"{spec.placeholder_id}.log", "ab")  # noqa: SIM115 - handed to the child
        with log:
            proc = subprocess.Popen(
                spec.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        self.procs[str(proc.pid)] = proc
        return str(proc.pid)

    def native_state(self, batch_id: str) -> str:
        proc = self.procs.get(batch_id)
        if proc is None:
            return "gone"
        code = proc.poll()
        if code is None:
            return "running"
        return "signalled" if code < 0 else f"exit:{code}"

    def poll(self, batch_ids: Sequence[str]) -> dict[str, PlaceholderState]:
        out = {}
        for b in batch_ids:
            native = self.native_state(b)
            out[b] = self.STATES.get(
                native, PlaceholderState.FAILED if native.startswith("exit:") else PlaceholderState.UNKNOWN
            )
        return out

    def cancel(self, batch_ids: Sequence[str]) -> None:
        for b in batch_ids:
            proc = self.procs.get(b)
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
