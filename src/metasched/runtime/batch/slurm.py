"""Slurm: placeholders are ``sbatch`` jobs; states from ``squeue`` (and ``sacct`` once squeue forgets)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from metasched.runtime.batch.base import BatchAdapter, BatchError, PlaceholderSpec
from metasched.runtime.metaqueue.states import PlaceholderState

Q, R = PlaceholderState.QUEUED, PlaceholderState.RUNNING


class SlurmAdapter(BatchAdapter):
    """``sbatch --parsable`` / ``squeue -t all`` / ``sacct`` / ``scancel``.

    ``TIMEOUT``, ``DEADLINE`` and ``PREEMPTED`` end a placeholder by the system's clock or will: it
    has expired, not failed (Parsl maps them the same way).
    """

    key: ClassVar[str] = "slurm"
    #: A job step of the placeholder's own allocation; ``--exact``: only what the job asks, so steps share it.
    LAUNCHER: ClassVar[str] = "srun --nodes={nodes} --ntasks={tasks} --cpus-per-task={cpus} --exact"
    STATES: ClassVar[dict[str, PlaceholderState]] = {
        "PENDING": Q,
        "CONFIGURING": Q,
        "REQUEUED": Q,
        "REQUEUE_HOLD": Q,
        "REQUEUE_FED": Q,
        "RESV_DEL_HOLD": Q,
        "SUSPENDED": Q,
        "STOPPED": Q,
        "RESIZING": R,
        "RUNNING": R,
        "COMPLETING": R,
        "SIGNALING": R,
        "STAGE_OUT": R,
        "COMPLETED": PlaceholderState.DONE,
        "TIMEOUT": PlaceholderState.EXPIRED,
        "DEADLINE": PlaceholderState.EXPIRED,
        "PREEMPTED": PlaceholderState.EXPIRED,
        "CANCELLED": PlaceholderState.CANCELLED,
        "FAILED": PlaceholderState.FAILED,
        "NODE_FAIL": PlaceholderState.FAILED,
        "BOOT_FAIL": PlaceholderState.FAILED,
        "OUT_OF_MEMORY": PlaceholderState.FAILED,
        "SPECIAL_EXIT": PlaceholderState.FAILED,
        "REVOKED": PlaceholderState.CANCELLED,
    }

    def submit(self, spec: PlaceholderSpec) -> str:
        d = [
            f"#SBATCH --job-name=ph-{spec.placeholder_id}",
            # cpus x nodes as that many one-cpu tasks: a job step (srun) or OpenMPI's mpirun (which takes its
            # slots from SLURM_TASKS_PER_NODE) can use every cpu; a plain child of the script still gets them all.
            f"#SBATCH --nodes={spec.nodes}",
            f"#SBATCH --ntasks-per-node={spec.cpus}",
            "#SBATCH --cpus-per-task=1",
            f"#SBATCH --output={self.workdir / (spec.placeholder_id + '.log')}",
        ]
        if self.queue:
            d.append(f"#SBATCH --partition={self.queue}")
        if spec.wall_time_s:
            d.append(f"#SBATCH --time={max(1, math.ceil(spec.wall_time_s / 60))}")
        if spec.mem_mb:
            d.append(f"#SBATCH --mem={spec.mem_mb}M")
        path = self.script(spec, d)
        with self.discarding(path):
            out = self.run(["sbatch", "--parsable", *self.extra_args, str(path)]).stdout.strip()
            batch_id = out.split(";")[0].strip()
            if not batch_id.isdigit():
                raise BatchError(f"sbatch answered {out!r}, expected a job id")
        return batch_id

    @classmethod
    def parse_squeue(cls, text: str) -> dict[str, PlaceholderState]:
        """``squeue -h -o '%i %T'`` lines -> states."""
        out = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 2:
                out[parts[0]] = cls.map_state(parts[1])
        return out

    @classmethod
    def parse_sacct(cls, text: str) -> dict[str, PlaceholderState]:
        """``sacct -n -X -P -o jobid,state`` lines -> states (``CANCELLED by 0`` -> CANCELLED)."""
        out = {}
        for line in text.splitlines():
            parts = line.strip().split("|")
            if len(parts) >= 2 and parts[0]:
                out[parts[0]] = cls.map_state(parts[1].split()[0] if parts[1].split() else "")
        return out

    def poll(self, batch_ids: Sequence[str]) -> dict[str, PlaceholderState]:
        if not batch_ids:
            return {}
        ids = ",".join(batch_ids)
        res = self.run(["squeue", "-h", "-t", "all", "-j", ids, "-o", "%i %T"], check=False)
        if res.returncode != 0 and "Invalid job id" not in res.stderr:
            # squeue itself failed (no controller, unusable slurm.conf): the states are unknown, and calling the
            # placeholders vanished would be a lie that replaces them all.
            raise BatchError(f"squeue exited {res.returncode}: {(res.stderr or res.stdout).strip()[:500]}")
        found = self.parse_squeue(res.stdout)
        missing = [b for b in batch_ids if b not in found]
        if missing:
            res = self.run(["sacct", "-c", "-n", "-X", "-P", "-o", "jobid,state", "-j", ",".join(missing)], check=False)
            found.update({k: v for k, v in self.parse_sacct(res.stdout).items() if k in missing})
        return {b: found.get(b, PlaceholderState.VANISHED) for b in batch_ids}

    def cancel(self, batch_ids: Sequence[str]) -> None:
        if batch_ids:
            self.run(["scancel", *batch_ids], check=False)
