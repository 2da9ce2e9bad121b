"""(Son of / Sun) Grid Engine: placeholders are ``qsub`` jobs; states from ``qstat``, then ``qacct``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from metasched.runtime.batch.base import BatchAdapter, BatchError, PlaceholderSpec
from metasched.runtime.metaqueue.states import PlaceholderState

Q, R = PlaceholderState.QUEUED, PlaceholderState.RUNNING


class GridEngineAdapter(BatchAdapter):
    """``qsub -terse`` / ``qstat`` / ``qacct -j`` / ``qdel``; multi-cpu placeholders use ``-pe smp N``
    (``N`` = cpus x nodes; another parallel environment with ``pe`` in sites.toml).

    qstat's state letters: ``qw`` waiting, ``hqw`` held, ``r`` running, ``t`` transferring, ``Rr``
    restarted, ``s``/``S``/``T`` suspended, ``dr``/``dt``/``dqw`` being deleted, ``Eqw`` error. Once the
    job leaves qstat, qacct's ``failed``/``exit_status`` decide: a wall-clock (``h_rt``) kill is
    EXPIRED; exit 137 (SIGKILL, what ``qdel`` sends) is CANCELLED.
    """

    key: ClassVar[str] = "gridengine"
    STATES: ClassVar[dict[str, PlaceholderState]] = {
        "qw": Q,
        "hqw": Q,
        "hRwq": Q,
        "Rq": Q,
        "s": Q,
        "S": Q,
        "T": Q,
        "ts": Q,
        "r": R,
        "t": R,
        "Rr": R,
        "Rt": R,
        "dr": PlaceholderState.CANCELLED,
        "dt": PlaceholderState.CANCELLED,
        "dqw": PlaceholderState.CANCELLED,
        "Eqw": PlaceholderState.FAILED,
        "Ehqw": PlaceholderState.FAILED,
        "acct:ok": PlaceholderState.DONE,
        "acct:expired": PlaceholderState.EXPIRED,
        "acct:killed": PlaceholderState.CANCELLED,
        "acct:failed": PlaceholderState.FAILED,
    }
    pe = "smp"

    def submit(self, spec: PlaceholderSpec) -> str:
        d = [
            "#$ -S /bin/bash",
            f"#$ -N ph-{spec.placeholder_id}"[:70],
            "#$ -j y",
            f"#$ -o {self.workdir / (spec.placeholder_id + '.log')}",
            "#$ -cwd",
        ]
        if self.queue:
            d.append(f"#$ -q {self.queue}")
        if spec.slots > 1:
            # A placeholder of several nodes needs a PE that spans hosts (allocation_rule $fill_up or
            # $round_robin): the site names it (``pe`` in sites.toml); the default smp keeps one host.
            d.append(f"#$ -pe {self.pe} {spec.slots}")
        if spec.wall_time_s:
            d.append(f"#$ -l h_rt={math.ceil(spec.wall_time_s)}")
        path = self.script(spec, d)
        with self.discarding(path):
            out = self.run(["qsub", "-terse", *self.extra_args, str(path)]).stdout.strip()
            batch_id = out.split(".")[0]
            if not batch_id.isdigit():
                raise BatchError(f"qsub answered {out!r}, expected a job id")
        return batch_id

    @classmethod
    def parse_qstat(cls, text: str) -> dict[str, PlaceholderState]:
        """Plain ``qstat`` output (header, dashes, one line per job) -> states."""
        out = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 5 and parts[0].isdigit():
                out[parts[0]] = cls.map_state(parts[4])
        return out

    @classmethod
    def parse_qacct(cls, text: str) -> dict[str, PlaceholderState]:
        """``qacct -j ID[,...]`` records -> states (the last record of each job wins)."""
        out: dict[str, PlaceholderState] = {}
        job = failed = status = None

        def flush() -> None:
            if job is None:
                return
            fail_text = (failed or "0").lower()
            if "h_rt" in fail_text or "wallclock" in fail_text or "limit" in fail_text:
                native = "acct:expired"
            elif status == "0" and fail_text.startswith("0"):
                native = "acct:ok"
            elif status in ("137", "143"):
                native = "acct:killed"
            else:
                native = "acct:failed"
            out[job] = cls.map_state(native)

        for line in text.splitlines():
            if line.startswith("====="):
                flush()
                job = failed = status = None
                continue
            key, _, value = line.partition(" ")
            value = value.strip()
            if key == "jobnumber":
                job = value
            elif key == "failed":
                failed = value
            elif key == "exit_status":
                status = value.split()[0] if value else value
        flush()
        return out

    def poll(self, batch_ids: Sequence[str]) -> dict[str, PlaceholderState]:
        if not batch_ids:
            return {}
        # qstat lists every job and exits 0 even with none: a failure means the states are unknown (not vanished).
        found = self.parse_qstat(self.run(["qstat"]).stdout)
        found = {k: v for k, v in found.items() if k in batch_ids}
        for b in batch_ids:
            if b not in found:
                acct = self.parse_qacct(self.run(["qacct", "-j", b], check=False).stdout)
                if b in acct:
                    found[b] = acct[b]
        return {b: found.get(b, PlaceholderState.VANISHED) for b in batch_ids}

    def cancel(self, batch_ids: Sequence[str]) -> None:
        if batch_ids:
            self.run(["qdel", *batch_ids], check=False)
