"""PBS (Torque, OpenPBS / PBS Pro): placeholders are ``qsub`` jobs; states from ``qstat -f``.

No PBS can be installed on the project's test machines (no Debian or PyPI package), so this adapter
is tested on recorded ``qstat -f`` outputs only (``tests/runtime/data/pbs_*``), not on a live PBS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from metasched.runtime.batch.base import BatchAdapter, BatchError, PlaceholderSpec
from metasched.runtime.metaqueue.states import PlaceholderState

Q, R = PlaceholderState.QUEUED, PlaceholderState.RUNNING

#: Torque's exit_status for a job killed at its walltime (JOB_EXEC_KILL_WALLTIME).
TORQUE_WALLTIME = "-11"


class PbsAdapter(BatchAdapter):
    """``qsub`` / ``qstat -f -x`` / ``qdel``.

    ``job_state`` letters: Q queued, H held, W waiting, T transit, S/U suspended, R running,
    E exiting, B array begun, C completed (Torque), F finished (PBS Pro with ``-x``), X subjob
    finished. A finished job's ``exit_status`` decides: 0 DONE; Torque -11 or PBS Pro -29 (walltime)
    EXPIRED; 271 (256+SIGTERM, qdel) CANCELLED; anything else FAILED.
    """

    key: ClassVar[str] = "pbs"
    STATES: ClassVar[dict[str, PlaceholderState]] = {
        "Q": Q,
        "H": Q,
        "W": Q,
        "T": Q,
        "S": Q,
        "U": Q,
        "M": Q,
        "R": R,
        "E": R,
        "B": R,
        "done:0": PlaceholderState.DONE,
        "done:-11": PlaceholderState.EXPIRED,
        "done:-29": PlaceholderState.EXPIRED,
        "done:271": PlaceholderState.CANCELLED,
        "done:265": PlaceholderState.CANCELLED,
        "done:other": PlaceholderState.FAILED,
    }

    def submit(self, spec: PlaceholderSpec) -> str:
        d = [
            f"#PBS -N ph-{spec.placeholder_id}"[:20],
            "#PBS -j oe",
            f"#PBS -o {self.workdir / (spec.placeholder_id + '.log')}",
            # Torque's form, which PBS Pro / OpenPBS also accept (they read it as select=N:ncpus=C).
            f"#PBS -l nodes={spec.nodes}:ppn={spec.cpus}",
        ]
        if self.queue:
            d.append(f"#PBS -q {self.queue}")
        if spec.wall_time_s:
            s = math.ceil(spec.wall_time_s)
            d.append(f"#PBS -l walltime={s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}")
        path = self.script(spec, d)
        with self.discarding(path):
            out = self.run(["qsub", *self.extra_args, str(path)]).stdout.strip()
            if not out or not out.split(".")[0].rstrip("[]").isdigit():
                raise BatchError(f"qsub answered {out!r}, expected a job id like 123.server")
        return out

    @classmethod
    def parse_qstat_f(cls, text: str) -> dict[str, PlaceholderState]:
        """``qstat -f`` blocks (``Job Id: 123.server`` then ``key = value`` lines) -> states."""
        out: dict[str, PlaceholderState] = {}
        job = state = status = None

        def flush() -> None:
            if job is None or state is None:
                return
            if state in ("C", "F", "X"):
                native = f"done:{status}" if f"done:{status}" in cls.STATES else "done:other"
                if status is None:
                    native = "done:0"
                out[job] = cls.map_state(native)
            else:
                out[job] = cls.map_state(state)

        for line in text.splitlines():
            if line.startswith("Job Id:"):
                flush()
                job, state, status = line.split(":", 1)[1].strip(), None, None
                continue
            key, sep, value = line.strip().partition(" = ")
            if not sep:
                continue
            if key == "job_state":
                state = value.strip()
            elif key in ("exit_status", "Exit_status"):
                status = value.strip()
        flush()
        return out

    def poll(self, batch_ids: Sequence[str]) -> dict[str, PlaceholderState]:
        if not batch_ids:
            return {}
        res = self.run(["qstat", "-f", "-x", *batch_ids], check=False)
        if res.returncode != 0 and not res.stdout.strip() and "Unknown Job Id" not in res.stderr:
            # qstat itself failed (server down, ...): the states are unknown, not vanished.
            raise BatchError(f"qstat exited {res.returncode}: {(res.stderr or res.stdout).strip()[:500]}")
        found = self.parse_qstat_f(res.stdout)

        def short(b: str) -> str:
            return b.split(".")[0]

        by_short = {short(k): v for k, v in found.items()}
        return {b: found.get(b, by_short.get(short(b), PlaceholderState.VANISHED)) for b in batch_ids}

    def cancel(self, batch_ids: Sequence[str]) -> None:
        if batch_ids:
            self.run(["qdel", *batch_ids], check=False)
