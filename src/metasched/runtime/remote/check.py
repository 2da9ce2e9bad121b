"""``metasched sites check``: is each site usable? Reachable, batch commands present, a test placeholder runs.

Every check is one line of a report, so a user setting up an overlay metacomputer (seed 003,
section 1.1: an account on each cluster and nothing else) sees at once what is missing where:
the SSH login, the batch client commands, a writable work directory, the Python that will run the
placeholder agent, and finally a real placeholder through the site's batch system.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from metasched.runtime.remote.runner import CommandError, CommandRunner

#: The batch client commands an adapter needs on the site, by adapter key.
BATCH_COMMANDS: Mapping[str, tuple[str, ...]] = {
    "local": (),
    "slurm": ("sbatch", "squeue", "scancel", "sacct"),
    "gridengine": ("qsub", "qstat", "qdel", "qacct"),
    "pbs": ("qsub", "qstat", "qdel"),
}


@dataclass(frozen=True, slots=True)
class CheckItem:
    """One verdict: ``name`` (what was checked), ``ok``, and a one-line ``detail``."""

    name: str
    ok: bool
    detail: str


def check_site(
    runner: CommandRunner,
    adapter: str,
    *,
    workdir: str | None = None,
    python: str | None = None,
    test_placeholder: Callable[[], tuple[bool, str]] | None = None,
    extra_commands: Sequence[str] = (),
    timeout_s: float = 30.0,
) -> list[CheckItem]:
    """Check one site; stops after the first failure that makes the rest meaningless (unreachable).

    ``workdir`` (where placeholder scripts go) must be creatable and writable; ``python`` is the
    interpreter named in the placeholder command and must import :mod:`metasched`;
    ``test_placeholder`` submits one placeholder and waits for it (it returns its own verdict).
    """
    if adapter not in BATCH_COMMANDS:
        raise ValueError(f"unknown adapter {adapter!r}; known: {', '.join(sorted(BATCH_COMMANDS))}")
    items: list[CheckItem] = []
    t0 = time.monotonic()
    try:
        res = runner.run("uname -n; id -un", timeout_s=timeout_s)
    except CommandError as exc:
        return [CheckItem("reachable", False, str(exc))]
    host_user = " as ".join(res.stdout.split()[:2])
    items.append(CheckItem("reachable", res.ok, f"{runner.target}: {host_user} in {time.monotonic() - t0:.2f} s"))
    if not res.ok:
        return items
    needed = (*BATCH_COMMANDS[adapter], *extra_commands)
    if needed:
        probe = " ".join(f'printf "%s\\t%s\\n" {shlex.quote(c)} "$(command -v {shlex.quote(c)})";' for c in needed)
        found = dict(line.split("\t", 1) for line in runner.run(probe, timeout_s=timeout_s).stdout.splitlines())
        missing = [c for c in needed if not found.get(c)]
        detail = f"missing: {', '.join(missing)}" if missing else ", ".join(f"{c}={found[c]}" for c in needed)
        items.append(CheckItem("batch commands", not missing, detail))
    if workdir is not None:
        script = 'mkdir -p "$1" && t="$1/.metasched-check.$$" && : > "$t" && rm -f "$t" && echo ok'
        res = runner.run(["sh", "-c", script, "sh", workdir], timeout_s=timeout_s)
        items.append(
            CheckItem("workdir writable", res.stdout.strip() == "ok", f"{workdir} {res.stderr.strip()}".strip())
        )
    if python is not None:
        code = "import metasched, sys; print(metasched.__version__, sys.version.split()[0])"
        res = runner.run([python, "-c", code], timeout_s=timeout_s)
        detail = f"{python}: metasched {res.stdout.strip()}" if res.ok else f"{python}: {res.stderr.strip()[-200:]}"
        items.append(CheckItem("placeholder python", res.ok, detail))
    if test_placeholder is not None and all(i.ok for i in items):
        try:
            ok, detail = test_placeholder()
        except Exception as exc:  # the verdict of this line: any failure of the test placeholder
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        items.append(CheckItem("test placeholder", ok, detail))
    return items
