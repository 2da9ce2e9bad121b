"""The batch-system contract: submit a placeholder, poll placeholder states, cancel placeholders.

Each adapter owns its script template and ONE table (``STATES``) mapping the batch system's native
states onto :class:`PlaceholderState`; every shell command it runs goes through :meth:`run`, the
one seam for logging, timeouts and errors. A placeholder that reached its wall-time limit is
``EXPIRED``, not ``FAILED``: in the pilot model a timeout is expected.
"""

from __future__ import annotations

import logging
import shlex
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from metasched.runtime.metaqueue.states import PlaceholderState
from metasched.runtime.remote.runner import CommandError, CommandRunner, CommandTimeout, LocalRunner, SiteUnreachable

log = logging.getLogger("metasched.batch")


class BatchError(RuntimeError):
    """A batch command failed or timed out (the message names the command and its output)."""


class SiteDown(BatchError):
    """The site could not be reached at all (SSH failed, or the site is in back-off after failures)."""


@dataclass(slots=True)
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float


@dataclass(slots=True)
class PlaceholderSpec:
    """What to submit: the placeholder's id, command line, size and wall time (``None`` = none).

    Size: ``cpus`` on each of ``nodes`` nodes (a placeholder for parallel jobs, issue 36).
    """

    placeholder_id: str
    command: list[str]
    cpus: int = 1
    mem_mb: int = 0
    wall_time_s: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    nodes: int = 1

    @property
    def slots(self) -> int:
        return self.cpus * self.nodes


class BatchAdapter(ABC):
    """One site's batch system. ``queue`` is the partition (Slurm) or queue (Grid Engine, PBS)."""

    key: ClassVar[str]
    #: native state -> ours. States absent from the table map to UNKNOWN.
    STATES: ClassVar[Mapping[str, PlaceholderState]]
    #: How a placeholder starts a parallel job on this batch system, unless the site names its own
    #: ``launcher`` (fields: :mod:`metasched.runtime.placeholder.launcher`): OpenMPI's mpirun on the host list.
    LAUNCHER: ClassVar[str] = "mpirun -np {tasks} --hostfile {hostfile}"
    #: How long (s) a placeholder that ran out of work stays idle, woken at once by new work, before it
    #: leaves, unless the site names its own ``linger``. None on a batch system: an idle placeholder there
    #: holds an allocation (nodes nobody else can use, charged to the user's quota) and a new one costs only
    #: a queue wait, which the throttle already weighs.
    LINGER_S: ClassVar[float] = 0.0

    def __init__(
        self,
        *,
        queue: str | None = None,
        workdir: str | Path,
        extra_args: Sequence[str] = (),
        command_timeout_s: float = 30.0,
        setup: Sequence[str] = (),
        runner: CommandRunner | None = None,
    ):
        self.queue = queue
        self.workdir = Path(workdir)
        self.extra_args = list(extra_args)
        self.command_timeout_s = command_timeout_s
        self.setup = list(setup)
        #: Where the batch commands run: this machine, or a site reached over SSH (issue 9).
        self.runner: CommandRunner = runner if runner is not None else LocalRunner()
        #: Commands that exited 0 so far: the site manager calls a site back up only on such evidence.
        self.ok_commands = 0

    def run(self, argv: Sequence[str], *, check: bool = True, input: str | None = None) -> CommandResult:
        """Run one batch command through the site's runner: logged, time-limited; raises
        :class:`BatchError` on failure when ``check`` (:class:`SiteDown` when the site cannot be reached)."""
        argv = [str(a) for a in argv]
        shown = shlex.join(argv)
        try:
            out = self.runner.run(argv, timeout_s=self.command_timeout_s, input=input)
        except CommandTimeout:
            raise BatchError(f"{shown}: no answer within {self.command_timeout_s:.0f} s") from None
        except SiteUnreachable as exc:
            raise SiteDown(str(exc)) from None
        except CommandError as exc:
            raise BatchError(str(exc)) from None
        res = CommandResult(argv, out.returncode, out.stdout, out.stderr, out.elapsed_s)
        log.debug("%s [%s] -> %s in %.2fs", shown, self.runner.target, out.returncode, res.elapsed_s)
        if out.returncode == 0:
            self.ok_commands += 1
        if check and out.returncode != 0:
            raise BatchError(f"{shown} exited {out.returncode}: {(out.stderr or out.stdout).strip()[:500]}")
        return res

    @classmethod
    def map_state(cls, native: str) -> PlaceholderState:
        return cls.STATES.get(native.strip(), PlaceholderState.UNKNOWN)

    def script(self, spec: PlaceholderSpec, directives: Sequence[str]) -> Path:
        """Write the placeholder's batch script (directives, setup lines, then exec the agent) on the site.

        Through the runner like every other command (``cat > script`` with the text on stdin), so the
        script lands where ``sbatch``/``qsub`` will read it, here or on a remote site.
        """
        path = self.workdir / f"{spec.placeholder_id}.sh"
        exports = [f"export {k}={shlex.quote(v)}" for k, v in spec.env.items()]
        body = ["#!/bin/bash", *directives, *exports, *self.setup, "exec " + shlex.join(spec.command), ""]
        write = 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod 755 "$1"'
        self.run(["sh", "-c", write, "sh", str(path)], input="\n".join(body))
        return path

    @contextmanager
    def discarding(self, path: Path) -> Iterator[None]:
        """Remove the placeholder script ``path`` if the submission in the block fails (a site that keeps
        refusing submissions must not collect a script per try); the error goes on."""
        try:
            yield
        except BatchError:
            with suppress(BatchError):
                self.run(["rm", "-f", str(path)], check=False)
            raise

    @abstractmethod
    def submit(self, spec: PlaceholderSpec) -> str:
        """Submit one placeholder; returns its ``batch_id``."""

    @abstractmethod
    def poll(self, batch_ids: Sequence[str]) -> dict[str, PlaceholderState]:
        """Current state of each placeholder (``VANISHED`` when the batch system no longer knows it)."""

    @abstractmethod
    def cancel(self, batch_ids: Sequence[str]) -> None:
        """Cancel placeholders (queued or running)."""
