"""The same reduced sweep through the local pool, a real Dask cluster and the metaqueue, alternated.

Issue 37's target: "a sweep through Dask with two workers on this machine finishes within 1.3x the
local pool's time". Each round runs one ``metasched experiment`` command three ways, one after the
other:

* ``local``: ``--workers 2`` (the runner's fork pool);
* ``dask``: a ``dask scheduler`` and two single-threaded ``dask worker`` processes (no nanny) started
  by this script before the command and stopped after it, the command given
  ``--executor dask://127.0.0.1:PORT``;
* ``metaqueue``: ``--executor metaqueue --workers 2`` (the embedded SQLite queue, two local
  placeholders, one job per run, a warm-up job first, a merge job last).

Wall is the command's own wall time (the Dask cluster's start-up is timed apart, as a cluster
exists before a sweep is sent to it). CPU is user + system of every process that ran: the command
and its children, and for Dask the scheduler and workers too (all of them are this script's
children and waited for, so ``RUSAGE_CHILDREN`` holds them). The rows (``runs.csv`` /
``results.csv``, the latter without its ``sim_s``/``cpu_s`` columns, which time each simulation)
of every way must be byte-identical to the first run's; the script stops if not.

    METASCHED_SHARED=/work/shared timeout 1800 .venv/bin/python bench/bench_executors.py --rounds 3
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

COMMANDS = {
    "sabin2003": (
        ["sabin2003", "--jobs", "3000", "--load", "1.0", "--load", "2.0", "--figure", "4", "--figure", "8"],
        "runs.csv",
        (),
    ),
    "ernemann2002": (
        ["ernemann2002", "--jobs", "6000", "--configs", "m128;m512", "--overheads", "0,25"],
        "results.csv",
        ("sim_s", "cpu_s"),
    ),
}
WAYS = ("local", "dask", "metaqueue")


def rows_of(path: Path, timing: tuple[str, ...]) -> bytes:
    """The rows file's bytes, without the columns that time the run itself (``timing``)."""
    if not timing:
        return path.read_bytes()
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    keep = [i for i, col in enumerate(rows[0]) if col not in timing]
    return "\n".join(",".join(row[i] for i in keep) for row in rows).encode()


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"no Dask scheduler on port {port} after {timeout_s} s")


class DaskCluster:
    """A ``dask scheduler`` and ``n`` single-threaded ``dask worker`` processes on this machine."""

    def __init__(self, logs: Path, n: int = 2) -> None:
        self.port = _free_port()
        self.logs = logs
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        dask = str(BIN / "dask")
        self.logs.mkdir(parents=True, exist_ok=True)
        self.procs.append(self._spawn([dask, "scheduler", "--host", "127.0.0.1", "--port", str(self.port)], 0))
        _wait_port(self.port, 60)
        address = f"tcp://127.0.0.1:{self.port}"
        for i in range(1, self.n + 1):
            cmd = [
                dask,
                "worker",
                address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--local-directory",
                str(self.logs / f"w{i}"),
            ]
            self.procs.append(self._spawn(cmd, i))
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(self.n, timeout=60)

    def _spawn(self, cmd: list[str], i: int) -> subprocess.Popen[bytes]:
        with (self.logs / f"dask{i}.log").open("ab") as log:
            return subprocess.Popen(
                [*cmd, "--no-dashboard"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        self.procs.clear()


def run(way: str, args: list[str], out: Path) -> tuple[float, float, float]:
    """(wall of the command, CPU of everything, start-up wall of the Dask cluster) of one way."""
    extra = ["--workers", "2"]
    cluster = None
    cpu0 = _cpu()
    setup = 0.0
    if way == "dask":
        cluster = DaskCluster(out.with_name(out.name + "-dask"))
        t = time.perf_counter()
        cluster.start()
        setup = time.perf_counter() - t
        extra = ["--executor", f"dask://127.0.0.1:{cluster.port}"]
    elif way == "metaqueue":
        extra += ["--executor", "metaqueue"]
    try:
        t0 = time.perf_counter()
        subprocess.run(
            [str(BIN / "metasched"), "experiment", *args, *extra, "--out", str(out)],
            check=True,
            cwd=HERE,
            stdout=subprocess.DEVNULL,
            timeout=1800,
        )
        wall = time.perf_counter() - t0
    finally:
        if cluster is not None:
            cluster.stop()
    return wall, _cpu() - cpu0, setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--experiment", action="append", choices=sorted(COMMANDS))
    parser.add_argument("--way", action="append", choices=WAYS, help="default: all three")
    args = parser.parse_args()
    os.environ.setdefault("METASCHED_SHARED", str(HERE.parent / "shared"))
    ways = args.way or list(WAYS)
    for name in args.experiment or sorted(COMMANDS):
        command, rows_file, timing = COMMANDS[name]
        walls: dict[str, list[float]] = {w: [] for w in ways}
        cpus: dict[str, list[float]] = {w: [] for w in ways}
        with tempfile.TemporaryDirectory() as tmp:
            reference: bytes | None = None
            for r in range(args.rounds):
                # alternate the order round by round, so that no way always runs first
                for way in ways[r % len(ways) :] + ways[: r % len(ways)]:
                    out = Path(tmp) / f"{way}{r}"
                    wall, cpu, setup = run(way, command, out)
                    rows = rows_of(out / rows_file, timing)
                    if reference is None:
                        reference = rows
                    elif rows != reference:
                        sys.exit(f"error: {name} through {way} gave other rows than the first run, {out / rows_file}")
                    walls[way].append(wall)
                    cpus[way].append(cpu)
                    note = f" (cluster start-up {setup:.2f} s)" if way == "dask" else ""
                    print(f"{name} round {r + 1} {way:9} wall {wall:7.2f} s cpu {cpu:7.2f} s{note}", flush=True)
        mean = {w: (sum(walls[w]) / len(walls[w]), sum(cpus[w]) / len(cpus[w])) for w in ways}
        for way in ways:
            ratio = f", wall {mean[way][0] / mean['local'][0]:.2f}x local" if "local" in mean else ""
            print(f"{name} {way:9}: mean wall {mean[way][0]:.2f} s, CPU {mean[way][1]:.2f} s{ratio}; rows identical")


if __name__ == "__main__":
    main()
