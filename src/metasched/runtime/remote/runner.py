"""The command seam: every shell command a batch adapter runs goes through a :class:`CommandRunner`.

A batch adapter (``runtime/batch``) never calls :mod:`subprocess` itself; its single command method
delegates to the runner it was given. :class:`LocalRunner` runs commands on this machine;
:class:`metasched.runtime.remote.ssh.SshRunner` runs them on a site in another administrative
domain over one multiplexed OpenSSH connection (seed 003, section 3: "We use the Secure Shell for
client-server communication across networks"). Both give the same :class:`CommandResult`, so the
adapter's parsing code does not know where the command ran.

Contract every runner keeps:

- a command is either an argv sequence (run as is, no shell) or a string (run by ``/bin/sh -c`` on
  the target); over SSH an argv is quoted with :func:`shlex.join` so it reaches the remote shell
  as the same words;
- every command has a timeout; on expiry the whole local process group is killed and
  :class:`CommandTimeout` is raised (never a hang);
- a non-zero exit is *returned*, not raised, unless ``check=True`` (then :class:`CommandFailed`);
- a target that cannot be reached raises :class:`SiteUnreachable` (an SSH runner also records it
  in its :class:`~metasched.runtime.remote.health.SiteHealth`).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

#: A command: argv words (no shell) or one shell string.
Command = Sequence[str] | str

DEFAULT_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What one command did: its exit status, its output (decoded as UTF-8) and how long it took."""

    command: str
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float

    @property
    def ok(self) -> bool:
        """Whether the command exited with status 0."""
        return self.returncode == 0


class CommandError(RuntimeError):
    """Base of the errors a runner raises; ``target`` names the site or host."""

    def __init__(self, target: str, command: str, message: str) -> None:
        super().__init__(f"{target}: {message} (command: {command})")
        self.target = target
        self.command = command


class CommandTimeout(CommandError):
    """The command did not finish within its timeout; its local processes were killed."""


class CommandFailed(CommandError):
    """The command exited non-zero and the caller asked for ``check=True``."""

    def __init__(self, target: str, result: CommandResult) -> None:
        super().__init__(target, result.command, f"exit {result.returncode}: {result.stderr.strip()[:500]}")
        self.result = result


class SiteUnreachable(CommandError):
    """The target could not be reached (connection refused, timed out, authentication failed, or
    the site is in back-off after earlier failures)."""


@runtime_checkable
class CommandRunner(Protocol):
    """Where a batch adapter's commands run. See the module docstring for the contract."""

    @property
    def target(self) -> str:
        """A short name of where commands run (``local``, ``user@host:port``), for logs and errors."""
        ...

    def run(
        self,
        command: Command,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        input: str | None = None,
        check: bool = False,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        """Run ``command`` on the target and return its result."""
        ...

    def put(self, local: Path, remote: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        """Copy the local file or directory ``local`` to ``remote`` on the target."""
        ...

    def get(self, remote: str, local: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        """Copy ``remote`` on the target to the local path ``local``."""
        ...

    def close(self) -> None:
        """Release connections; the runner may be used again afterwards (it reconnects)."""
        ...


def run_many(
    runner: CommandRunner,
    commands: Sequence[Command],
    *,
    inputs: Sequence[str | None] | None = None,
    parallel: int = 8,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[CommandResult | CommandError]:
    """Run independent commands on one runner, up to ``parallel`` at a time; results in input order.

    Over SSH each command is a channel of the same master, so this overlaps the round trips of a
    burst of submissions (sshd's default ``MaxSessions`` is 10: keep ``parallel`` below it). An
    error is returned in its slot, not raised, so one failed submission does not hide the others.
    """
    from concurrent.futures import ThreadPoolExecutor

    if parallel < 1:
        raise ValueError(f"parallel must be >= 1, got {parallel}")
    if inputs is not None and len(inputs) != len(commands):
        raise ValueError(f"{len(commands)} commands but {len(inputs)} inputs")

    def one(i: int) -> CommandResult | CommandError:
        try:
            return runner.run(commands[i], input=None if inputs is None else inputs[i], timeout_s=timeout_s)
        except CommandError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=min(parallel, max(1, len(commands)))) as pool:
        return list(pool.map(one, range(len(commands))))


def display(command: Command) -> str:
    """The command as one shell-quoted line (for logs, errors and the SSH remote command)."""
    return command if isinstance(command, str) else shlex.join(command)


def execute(
    argv: Sequence[str],
    *,
    timeout_s: float,
    input: str | None,
    target: str,
    shown: str,
    env: dict[str, str] | None = None,
) -> CommandResult:
    """Run ``argv`` locally in its own process group; on timeout kill the group, raise :class:`CommandTimeout`.

    Shared by the local and the SSH runner so both time out the same way. A new session is used
    so that a shell's children die with it (``subprocess.run(timeout=)`` kills only the shell).
    """
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    started = time.monotonic()
    full_env = None if env is None else {**os.environ, **env}
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=full_env,
        )
    except (FileNotFoundError, PermissionError) as exc:
        # What a shell would answer (127 not found, 126 not executable), so local and remote agree.
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        return CommandResult(shown, code, "", f"{argv[0]}: {exc.strerror}\n", time.monotonic() - started)
    try:
        out, err = proc.communicate(input.encode() if input is not None else None, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()
        # Do not wait for EOF: an ssh mux client hands its pipe ends to the master, which keeps them
        # open until the remote command ends, however long that is.
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        raise CommandTimeout(target, shown, f"timed out after {timeout_s:g} s") from None
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    return CommandResult(
        command=shown,
        returncode=proc.returncode,
        stdout=out.decode(errors="replace"),
        stderr=err.decode(errors="replace"),
        elapsed_s=time.monotonic() - started,
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


class LocalRunner:
    """Runs commands on this machine (a site whose batch system is local, e.g. the testbed's Slurm)."""

    def __init__(self, *, shell: str = "/bin/sh") -> None:
        self._shell = shell

    @property
    def target(self) -> str:
        return "local"

    def run(
        self,
        command: Command,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        input: str | None = None,
        check: bool = False,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        argv = [self._shell, "-c", command] if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("empty command")
        result = execute(argv, timeout_s=timeout_s, input=input, target=self.target, shown=display(command), env=env)
        if check and not result.ok:
            raise CommandFailed(self.target, result)
        return result

    def put(self, local: Path, remote: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        _copy(Path(local), Path(remote))

    def get(self, remote: str, local: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        _copy(Path(remote), Path(local))

    def close(self) -> None:
        return None


def _copy(src: Path, dst: Path) -> None:
    if not src.exists():
        raise FileNotFoundError(f"no such file or directory: {src}")
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
