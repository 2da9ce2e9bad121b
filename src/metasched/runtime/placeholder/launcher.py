"""Starting a parallel job (MPI ranks, several nodes) inside a placeholder: the site's launcher.

A job asking for more than one task or node (``submit --tasks N --nodes K``) is started as
``LAUNCHER COMMAND``, where ``LAUNCHER`` is the site's template (``launcher`` in sites.toml; each
batch adapter has a default, :attr:`~metasched.runtime.batch.base.BatchAdapter.LAUNCHER`) with these
fields filled in:

- ``{tasks}``: the job's MPI ranks; ``{nodes}``: its nodes; ``{cpus}``: cpus per task;
- ``{tasks_per_node}``: ``ceil(tasks / nodes)``, how the fit check spreads the tasks
  (:func:`metasched.policy.claim.fits_shape`);
- ``{hostfile}``: the placeholder's hosts as an OpenMPI host file (``HOST slots=N``), made from the
  batch system's list: Grid Engine's ``$PE_HOSTFILE``, PBS's ``$PBS_NODEFILE``, Slurm's
  ``$SLURM_JOB_NODELIST`` (via ``scontrol show hostnames``), else this host with the placeholder's cpus.

Under Slurm the default is ``srun`` (the allocation is the placeholder's own); elsewhere ``mpirun``.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import socket
import subprocess
from collections.abc import Mapping
from typing import Protocol

#: The launcher when the site names none (Grid Engine, PBS, local): OpenMPI's mpirun on the host list.
DEFAULT_LAUNCHER = "mpirun -np {tasks} --hostfile {hostfile}"
#: The fields a launcher template may use.
FIELDS = ("tasks", "nodes", "cpus", "tasks_per_node", "hostfile")


class LauncherError(ValueError):
    """A launcher template that cannot be used (an unknown field, unbalanced quotes, empty)."""


class _Shape(Protocol):
    tasks: int
    nodes: int
    cpus: int


class Launcher:
    """A launcher template, checked once: :meth:`argv` gives the words to put before a job's command."""

    def __init__(self, template: str) -> None:
        self.template = template
        # Fill every field with a sample value: an unknown field or bad quoting is refused here, not per job.
        try:
            words = shlex.split(template.format(tasks=2, nodes=1, cpus=1, tasks_per_node=2, hostfile="h"))
        except KeyError as exc:
            raise LauncherError(
                f"launcher {template!r}: unknown field {{{exc.args[0]}}}; known: {', '.join(FIELDS)}"
            ) from None
        except (ValueError, IndexError) as exc:
            raise LauncherError(f"launcher {template!r}: {exc}") from None
        if not words:
            raise LauncherError("launcher is empty: give e.g. 'srun' or 'mpirun -np {tasks} --hostfile {hostfile}'")

    @property
    def needs_hostfile(self) -> bool:
        """Whether the template uses ``{hostfile}`` (else none is written: srun knows its allocation)."""
        return "{hostfile}" in self.template

    def argv(self, job: _Shape, hostfile: str) -> list[str]:
        text = self.template.format(
            tasks=job.tasks,
            nodes=job.nodes,
            cpus=job.cpus,
            tasks_per_node=math.ceil(job.tasks / job.nodes),
            hostfile=shlex.quote(hostfile),
        )
        words = shlex.split(text)
        # The job is started without a shell (posix_spawn does not search PATH): find the launcher here.
        words[0] = shutil.which(words[0]) or words[0]
        return words


def hosts(env: Mapping[str, str], cpus: int, nodes: int) -> list[tuple[str, int]]:
    """The placeholder's hosts and slots from the batch system's list (see the module doc), in its order.

    Grid Engine's ``$PE_HOSTFILE`` lines are ``host slots queue processors``; PBS's ``$PBS_NODEFILE``
    has a host per slot; Slurm's node list is expanded by ``scontrol`` (``cpus`` slots each).
    Without any: this host, ``cpus x nodes`` slots.
    """
    if env.get("PE_HOSTFILE") and os.path.isfile(env["PE_HOSTFILE"]):
        out = []
        with open(env["PE_HOSTFILE"]) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    out.append((parts[0], int(parts[1])))
        if out:
            return out
    if env.get("PBS_NODEFILE") and os.path.isfile(env["PBS_NODEFILE"]):
        counts: dict[str, int] = {}
        with open(env["PBS_NODEFILE"]) as f:
            for line in f:
                if line.strip():
                    counts[line.strip()] = counts.get(line.strip(), 0) + 1
        if counts:
            return list(counts.items())
    if env.get("SLURM_JOB_NODELIST"):
        try:
            res = subprocess.run(
                ["scontrol", "show", "hostnames", env["SLURM_JOB_NODELIST"]],
                capture_output=True,
                text=True,
                timeout=30,
            )
            names = res.stdout.split() if res.returncode == 0 else []
        except (OSError, subprocess.SubprocessError):
            names = []
        if names:
            return [(n, cpus) for n in names]
    return [(socket.gethostname(), cpus * nodes)]
