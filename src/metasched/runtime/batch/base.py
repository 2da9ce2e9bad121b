"""The batch-system contract: submit a placeholder, poll placeholder states, cancel placeholders.

Each adapter owns its script template and ONE table (``STATES``) mapping the batch system's native
states onto :class:`PlaceholderState`; every shell command it runs goes through :meth:`run`, the
one seam for logging, timeouts and errors. A placeholder that reached its wall-time limit is
``EXPIRED``, not ``FAILED``: in the pilot model a timeout is expected.
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from metasched.runtime.metaqueue.states import PlaceholderState

log = logging.getLogger("metasched.batch")


class BatchError(RuntimeError):
    """A batch command failed or timed out (the message names the command and its output)."""


@dataclass(slots=True)
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float


@dataclass(slots=True)
class PlaceholderSpec:
    """What to submit: the placeholder's id, command line, size and wall time (``None`` = none)."""

    placeholder_id: str
    command: list[str]
    cpus: int = 1
    mem_mb: int = 0
    wall_time_s: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)


class BatchAdapter(ABC):
    """One site's batch system. ``queue`` is the partition (Slurm) or queue (Grid Engine, PBS)."""

    key: ClassVar[str]
    #: native state -> ours. States absent from the table map to UNKNOWN.
    STATES: ClassVar[Mapping[str, PlaceholderState]]

    def __init__(
        self,
        *,
        queue: str | None = None,
        workdir: str | Path,
        extra_args: Sequence[str] = (),
        command_timeout_s: float = 30.0,
        setup: Sequence[str] = (),
    ):
        self.queue = queue
        self.workdir = Path(workdir)
        self.extra_args = list(extra_args)
        self.command_timeout_s = command_timeout_s
        self.setup = list(setup)

    def run(self, argv: Sequence[str], *, check: bool = True) -> CommandResult:
        """Run one batch command: logged, time-limited; raises :class:`BatchError` on failure when ``check``."""
        argv = [str(a) for a in argv]
        t0 = time.monotonic()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=self.command_timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise BatchError(f"{shlex.join(argv)}: no answer within {self.command_timeout_s:.0f} s") from None
        except OSError as exc:
            raise BatchError(f"{shlex.join(argv)}: {exc.strerror}") from None
        res = CommandResult(argv, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0)
        log.debug("%s -> %s in %.2fs", shlex.join(argv), proc.returncode, res.elapsed_s)
        if check and proc.returncode != 0:
            raise BatchError(
                f"{shlex.join(argv)} exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:500]}"
            )
        return res

    @classmethod
    def map_state(cls, native: str) -> PlaceholderState:
        return cls.STATES.get(native.strip(), PlaceholderState.UNKNOWN)

    def script(self, spec: PlaceholderSpec, directives: Sequence[str]) -> Path:
        """Write the placeholder's batch script (directives, setup lines, then exec the agent)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        path = self.workdir / f"{spec.placeholder_id}.sh"
        exports = [f"export {k}={shlex.quote(v)}" for k, v in spec.env.items()]
        body = ["#!/bin/bash", *directives, *exports, *self.setup, "exec " + shlex.join(spec.command), ""]
        path.write_text("\n".join(body))
        path.chmod(0o755)
        return path

    @abstractmethod
    def submit(self, spec: PlaceholderSpec) -> str:
        """Submit one placeholder; returns its ``batch_id``."""

    @abstractmethod
    def poll(self, batch_ids: Sequence[str]) -> dict[str, PlaceholderState]:
        """Current state of each placeholder (``VANISHED`` when the batch system no longer knows it)."""

    @abstractmethod
    def cancel(self, batch_ids: Sequence[str]) -> None:
        """Cancel placeholders (queued or running)."""
