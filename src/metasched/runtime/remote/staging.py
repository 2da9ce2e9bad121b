"""Staging: a job's input files go to the site before it runs, its outputs come back before it is complete.

Seed 003 builds the overlay metacomputer from "Secure Shell (ssh), Secure Copy (scp)" only; a
site in another administrative domain shares no file system with the metaqueue, so the files a job
reads and writes have to travel with it. The copies run on the metaqueue side, over the site's one
SSH master (:class:`~metasched.runtime.remote.ssh.SshRunner`), because a compute node often cannot
reach the metaqueue host at all.

Declared per job in the workflow file::

    - name: align
      command: bwa mem ref.fa reads.fq > out.sam
      inputs: [data/ref.fa, "data/reads-1.fq:reads.fq"]   # local[:name in the job directory]
      outputs: [out.sam, "logs/:results/align-logs/"]     # name in the job directory[:local]

A job with staging runs in its own directory on the site, ``<stage_root>/<job_id>-<attempt>``,
and the two sides meet there through marker files, so nothing new is needed in the protocol, the
store or the placeholder agent: at submission the job's command is wrapped (:func:`wrap_command`)
and its :class:`StageSpec` rides in its environment (``METASCHED_STAGE``), where the site manager
finds it.

1. the placeholder claims the job and starts the wrapper, which makes the directory and waits for
   ``.staged-in`` (the agent keeps heartbeating: the lease holds);
2. the site manager sees the job running at its site, copies the inputs in and writes
   ``.staged-in``;
3. the placeholder runs the job there, writes its exit status to ``.finished`` and waits
   (heartbeating, so it keeps the lease) for ``.staged-out``;
4. the site manager copies the outputs back and writes ``.staged-out``; only then does the
   placeholder report the job complete.

Invariant: a job is reported complete only after every declared output is back on the metaqueue
side (a missing output makes stage-out fail, and the job is reported with exit status
:data:`STAGE_OUT_FAILED` instead of its own). If the site goes away in between, the placeholder
cannot renew its lease either, the lease expires and the job runs again elsewhere.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from metasched.runtime.remote.runner import CommandFailed, CommandRunner

STAGED_IN = ".staged-in"
FINISHED = ".finished"
STAGED_OUT = ".staged-out"
STAGE_FAILED = ".stage-failed"
#: The exit status reported for a job whose outputs could not be brought back.
STAGE_OUT_FAILED = 197


@dataclass(frozen=True, slots=True)
class StagedFile:
    """One copy: ``local`` on the metaqueue side, ``remote`` relative to the job directory."""

    local: str
    remote: str


@dataclass(frozen=True, slots=True)
class StageSpec:
    """What a job needs copied in and out (see the module docstring for the workflow syntax)."""

    inputs: tuple[StagedFile, ...] = ()
    outputs: tuple[StagedFile, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.inputs and not self.outputs

    @classmethod
    def from_workflow(cls, entry: Mapping[str, Any], *, base_dir: Path | None = None, where: str = "job") -> StageSpec:
        """Read ``inputs`` and ``outputs`` of one workflow entry; local paths resolve against ``base_dir``."""
        return cls(
            inputs=tuple(_parse_items(entry.get("inputs"), where, "inputs", base_dir, local_first=True)),
            outputs=tuple(_parse_items(entry.get("outputs"), where, "outputs", base_dir, local_first=False)),
        )

    def as_json(self) -> str:
        return json.dumps(
            {
                "inputs": [[f.local, f.remote] for f in self.inputs],
                "outputs": [[f.local, f.remote] for f in self.outputs],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> StageSpec:
        data = json.loads(text)
        return cls(
            inputs=tuple(StagedFile(a, b) for a, b in data.get("inputs", [])),
            outputs=tuple(StagedFile(a, b) for a, b in data.get("outputs", [])),
        )


def _parse_items(value: Any, where: str, key: str, base_dir: Path | None, *, local_first: bool) -> Iterable[StagedFile]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"{where}: {key} must be a list of paths, got {type(value).__name__}")
    out = []
    for item in value:
        if isinstance(item, Mapping):
            unknown = set(item) - {"local", "remote"}
            if unknown or "local" not in item:
                raise ValueError(f"{where}: {key} entry {dict(item)!r} needs 'local' (and optional 'remote')")
            local, remote = str(item["local"]), str(item.get("remote") or "")
        elif isinstance(item, str) and item.strip():
            first, _, second = item.partition(":")
            if local_first:
                local, remote = first, second
            else:
                remote, local = first, second
        else:
            raise ValueError(f"{where}: {key} entry {item!r} is not a path")
        if local_first:
            remote = remote or PurePosixPath(local.rstrip("/")).name
        else:
            local = local or remote
        _check_relative(remote, where, key)
        local_path = Path(local).expanduser()
        if base_dir is not None and not local_path.is_absolute():
            local_path = base_dir / local_path
        out.append(StagedFile(str(local_path) + ("/" if local.endswith("/") else ""), remote))
    return out


def _check_relative(remote: str, where: str, key: str) -> None:
    p = PurePosixPath(remote)
    if not remote or p.is_absolute() or ".." in p.parts:
        raise ValueError(f"{where}: {key} name {remote!r} must be a relative path inside the job directory")


#: The job environment variable carrying the :class:`StageSpec` (JSON) from the workflow to the site manager.
STAGE_ENV = "METASCHED_STAGE"
#: The placeholder environment variable naming the stage root on the site (default ``$HOME/metasched-stage``).
STAGE_ROOT_ENV = "METASCHED_STAGE_ROOT"
DEFAULT_STAGE_ROOT = "metasched-stage"


def wrap_command(command: str, *, poll_s: float = 0.5) -> str:
    """The job's command run between the two waits of the marker protocol (module docstring).

    Uses only what the placeholder agent already sets (``METASCHED_JOB_ID``, ``METASCHED_ATTEMPT``) and
    the site's ``METASCHED_STAGE_ROOT``. Invariant: the wrapper exits (so the agent reports the job)
    only after ``.staged-out`` exists, or with :data:`STAGE_OUT_FAILED` after ``.stage-failed``.
    """

    def wait(marker: str) -> str:
        give_up = f'[ -e "$d/{STAGE_FAILED}" ] && exit {STAGE_OUT_FAILED}'
        return f'until [ -e "$d/{marker}" ]; do {give_up}; sleep {poll_s:g}; done'

    return "\n".join(
        [
            f'd="${{{STAGE_ROOT_ENV}:-$HOME/{DEFAULT_STAGE_ROOT}}}/$METASCHED_JOB_ID-$METASCHED_ATTEMPT"',
            'mkdir -p "$d" || exit 1',
            wait(STAGED_IN),
            '(cd "$d" || exit 1',
            command,
            ")",
            "rc=$?",
            f'echo "$rc" > "$d/{FINISHED}"',
            wait(STAGED_OUT),
            'exit "$rc"',
        ]
    )


def job_dir(stage_root: str, job_id: int, attempt: int) -> str:
    """The job's directory on the site (one per attempt, so a rerun never sees a stale marker)."""
    return str(PurePosixPath(stage_root) / f"{job_id}-{attempt}")


@dataclass(slots=True)
class StageReport:
    """What one :meth:`SiteStager.sync` did (job dirs staged in / out, and failures with their reason)."""

    staged_in: list[str] = field(default_factory=list)
    staged_out: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


class SiteStager:
    """The metaqueue side of staging for one site: one listing command per sync, then the copies.

    ``jobs`` maps each running job's directory on the site to its :class:`StageSpec`.
    """

    def __init__(self, runner: CommandRunner, *, timeout_s: float = 300.0) -> None:
        self.runner = runner
        self.timeout_s = timeout_s

    def markers(self, dirs: Sequence[str]) -> dict[str, set[str]]:
        """The marker files present in each job directory (one remote command for all of them)."""
        if not dirs:
            return {}
        names = " ".join(shlex.quote(m) for m in (STAGED_IN, FINISHED, STAGED_OUT, STAGE_FAILED))
        script = (
            f'for d in "$@"; do for m in {names}; do [ -e "$d/$m" ] && printf "%s\\t%s\\n" "$d" "$m"; done; done; true'
        )
        res = self.runner.run(["sh", "-c", script, "sh", *dirs], timeout_s=60, check=True)
        found: dict[str, set[str]] = {d: set() for d in dirs}
        for line in res.stdout.splitlines():
            d, _, m = line.partition("\t")
            if d in found:
                found[d].add(m)
        return found

    def sync(self, jobs: Mapping[str, StageSpec]) -> StageReport:
        """Stage in every job waiting for its inputs and stage out every finished job."""
        report = StageReport()
        present = self.markers(sorted(jobs))
        for d, spec in sorted(jobs.items()):
            marks = present.get(d, set())
            if STAGE_FAILED in marks:
                continue
            try:
                if STAGED_IN not in marks:
                    self.stage_in(d, spec)
                    report.staged_in.append(d)
                elif FINISHED in marks and STAGED_OUT not in marks:
                    self.stage_out(d, spec)
                    report.staged_out.append(d)
            except (CommandFailed, FileNotFoundError) as exc:
                report.failed[d] = str(exc)
                self._mark(d, STAGE_FAILED, str(exc))
        return report

    def stage_in(self, d: str, spec: StageSpec) -> None:
        """Copy the inputs into ``d`` (made if needed), then write ``.staged-in``."""
        self.runner.run(["mkdir", "-p", d], timeout_s=60, check=True)
        for f in spec.inputs:
            parent = str(PurePosixPath(d, f.remote).parent)
            if parent != d:
                self.runner.run(["mkdir", "-p", parent], timeout_s=60, check=True)
            local = Path(f.local.rstrip("/"))
            if not local.exists():
                raise FileNotFoundError(f"input {local} does not exist")
            self.runner.put(local, str(PurePosixPath(d, f.remote)), timeout_s=self.timeout_s)
        self._mark(d, STAGED_IN, str(time.time()))

    def stage_out(self, d: str, spec: StageSpec) -> None:
        """Copy the outputs back, then write ``.staged-out`` (raises if an output is missing)."""
        for f in spec.outputs:
            local = Path(f.local.rstrip("/"))
            local.parent.mkdir(parents=True, exist_ok=True)
            self.runner.get(str(PurePosixPath(d, f.remote.rstrip("/"))), local, timeout_s=self.timeout_s)
        self._mark(d, STAGED_OUT, str(time.time()))

    def _mark(self, d: str, marker: str, text: str) -> None:
        self.runner.run(
            ["sh", "-c", 'mkdir -p "$1" && cat > "$1/$2"', "sh", d, marker], input=text + "\n", timeout_s=60, check=True
        )


# -- the placeholder's side (runs on the site, local files) ---------------------------------------


def wait_for_marker(d: str | Path, marker: str, *, timeout_s: float, poll_s: float = 0.5) -> str | None:
    """Wait until ``d/marker`` exists; returns its text, or None on timeout. Returns at once on ``.stage-failed``."""
    deadline = time.monotonic() + timeout_s
    path, failed = Path(d) / marker, Path(d) / STAGE_FAILED
    while True:
        if path.exists():
            return path.read_text()
        if failed.exists():
            return None
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll_s)


def mark_finished(d: str | Path, exit_code: int) -> None:
    """The placeholder's note that the job ended with ``exit_code`` (the site manager then stages out)."""
    (Path(d) / FINISHED).write_text(f"{exit_code}\n")
