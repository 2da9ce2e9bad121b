"""Benchmarks of the live metaqueue (not tests): run from the repository root with

    PYTHONPATH=src python bench/bench_metaqueue.py [--pg postgresql://...] [--jobs 2000] [--only ROWS] [--repeat N]

(``--only noop-sqlite,noop-pg,...`` runs only those rows; ``--repeat N`` runs the no-op rows N times and
measures the raw limit again after each time: on a shared machine compare every row with the raw limit
measured next to it.)

0. the raw limit: ``seq N | xargs -P2 -n1 true`` (no queue at all), for scale;
1. no-op jobs/s: N ``true`` jobs, 2 local placeholders, straight to the database (SQLite; PostgreSQL when
   --pg is given) and through the HTTP server (SQLite), from placeholder start to the last completion;
2. a 1,000-job checkers lattice (widths 1..32..1 = 1,024 jobs) with 2 local placeholders, SQLite direct;
3. idle latency: one waiting placeholder, submit one ``true`` job, time from submit to the accepted completion
   (median of 20);
4. claims/s: 100 concurrent clients claiming through the server (batch size 1 and 10), over 20,000
   queued jobs, for 10 s or until the queue is empty.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.runtime.lattice import lattice  # noqa: E402

from metasched.runtime.metaqueue.store import JobSpec, Store  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


STARTED: list[subprocess.Popen[bytes]] = []


def placeholders(n: int, args: list[str], home: Path) -> list[subprocess.Popen[bytes]]:
    env = {**ENV, "METASCHED_HOME": str(home)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "metasched",
                "placeholder",
                "--site",
                "local",
                "--max-wait",
                "0.02",
                "--log-dir",
                str(home / "logs"),
                *args,
            ],
            env=env,
        )
        for _ in range(n)
    ]
    STARTED.extend(procs)
    return procs


def wait_done(store: Store, total: int, timeout_s: float = 600) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout_s:
        c = store.counts()
        if c.get("done", 0) + c.get("failed", 0) >= total:
            return
        time.sleep(0.05)
    raise TimeoutError(str(store.counts()))


def first_start_last_end(store: Store) -> tuple[float, float]:
    jobs = store.jobs()
    return min(j["start_at"] for j in jobs), max(j["end_at"] for j in jobs)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def server(db: str, home: Path):  # type: ignore[no-untyped-def]
    port = free_port()
    env = {**ENV, "METASCHED_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url + "/openapi.json", timeout=1).status_code == 200:
                break
        time.sleep(0.1)
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def noop_rate(db: str, n: int, home: Path, via_server: bool) -> float:
    store = Store.open(db)
    store.submit([JobSpec("true") for _ in range(n)])
    if via_server:
        with server(db, home) as url:
            procs = placeholders(2, ["--server", url], home)
            wait_done(store, n)
            # (before the server stops: a placeholder not yet told EXIT would retry for minutes)
            for p in procs:
                p.wait(timeout=60)
    else:
        procs = placeholders(2, ["--db", db], home)
        wait_done(store, n)
        for p in procs:
            p.wait(timeout=60)
    t0, t1 = first_start_last_end(store)
    store.close()
    return n / (t1 - t0)


def lattice_time(db: str, home: Path) -> tuple[int, float]:
    store = Store.open(db)
    specs = lattice(32, "true")
    store.submit(specs)
    procs = placeholders(2, ["--db", db], home)
    wait_done(store, len(specs))
    for p in procs:
        p.wait(timeout=60)
    t0, t1 = first_start_last_end(store)
    store.close()
    return len(specs), t1 - t0


def idle_latency(db: str, home: Path, reps: int = 20) -> float:
    store = Store.open(db)
    procs = placeholders(1, ["--db", db, "--linger"], home)
    store.submit([JobSpec("true")])
    wait_done(store, 1, 120)  # the placeholder is up
    lat = []
    for i in range(reps):
        time.sleep(0.3)
        t0 = time.time()
        store.submit([JobSpec("true")])
        wait_done(store, i + 2, 60)
        done = [e for e in store.events() if e["kind"] == "done"][-1]
        lat.append(done["at"] - t0)
    for p in procs:
        p.kill()
    store.close()
    return statistics.median(lat)


async def claim_rate(url: str, token: str, clients: int, batch: int, seconds: float) -> tuple[float, float]:
    """Requests/s and jobs claimed/s by ``clients`` concurrent keep-alive connections, each claiming
    ``batch`` jobs per request in a loop.

    The load generator writes HTTP/1.1 by hand on asyncio streams: httpx's AsyncClient spent ~130 ms of
    CPU per request with 100 concurrent connections (its pool), so it, not the server, set the figure.
    """
    host, port = url.removeprefix("http://").split(":")
    counts = [0, 0]
    stop = time.time() + seconds
    ends: list[float] = []

    async def one(k: int) -> None:
        body = json.dumps({"placeholder_id": f"b{k}", "site": "bench", "cpus": batch, "limit": batch}).encode()
        head = (
            f"POST /v1/claim HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while time.time() < stop:
                writer.write(head + body)
                headers = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in headers.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                status = int(headers.split(b" ", 2)[1])
                answer = await reader.readexactly(length)
                if status != 200:
                    raise RuntimeError(f"claim answered {status}: {answer[:200]!r}")
                jobs = len(json.loads(answer)["jobs"])
                if not jobs:  # the queue is empty: the measure ends for this client
                    break
                counts[0] += 1
                counts[1] += jobs
        finally:
            ends.append(time.time())
            writer.close()

    t0 = time.time()
    await asyncio.gather(*(one(k) for k in range(clients)))
    dt = max(ends) - t0
    return counts[0] / dt, counts[1] / dt


def claims(db: str, home: Path, n_jobs: int, batch: int) -> tuple[float, float]:
    """Claim rate over ``n_jobs`` queued jobs for at most 10 s (until the queue is empty, if sooner)."""
    store = Store.open(db)
    store.submit([JobSpec("true") for _ in range(n_jobs)])
    with server(db, home) as url:
        token = (home / "token").read_text().strip()
        return asyncio.run(claim_rate(url, token, 100, batch, 10.0))


ROWS = ("noop-sqlite", "noop-server", "noop-pg", "noop-pg-server", "lattice", "latency", "claims1", "claims10")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", help="PostgreSQL admin URL (a scratch database is created and dropped)")
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument(
        "--only",
        default="",
        help=f"comma-separated rows to run (default all): {','.join(ROWS)}; the raw limit always runs",
    )
    ap.add_argument("--repeat", type=int, default=1, help="run the no-op rows this many times each")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    if only - set(ROWS):
        ap.error(f"unknown rows {sorted(only - set(ROWS))}: choose among {','.join(ROWS)}")

    def want(row: str) -> bool:
        return not only or row in only

    tmp = Path(tempfile.mkdtemp(prefix="mqbench-"))
    dbs: dict[str, str] = {}

    def sqlite() -> str:
        return f"sqlite:///{tmp / (uuid.uuid4().hex + '.db')}"

    pg_admin = None
    if args.pg:
        import psycopg

        pg_admin = psycopg.connect(args.pg, autocommit=True)

    def pg() -> str:
        assert pg_admin is not None
        name = "bench_" + uuid.uuid4().hex[:10]
        pg_admin.execute(f'CREATE DATABASE "{name}"')
        dbs[name] = name
        return args.pg.rsplit("/", 1)[0] + "/" + name

    load = os.getloadavg()[0]
    print(f"machine: {platform.node()} {os.cpu_count()} cpus, load {load:.1f}, python {platform.python_version()}")

    class Rows(list):  # type: ignore[type-arg]
        def append(self, row: tuple[str, str]) -> None:  # type: ignore[override]
            print(f"| {row[0]} | {row[1]} |", flush=True)
            super().append(row)

    rows = Rows()

    # The floor on this machine at this instant: the same no-op jobs with no queue at all.
    def raw_limit() -> None:
        t0 = time.time()
        subprocess.run(f"seq {args.jobs} | xargs -P2 -n1 true", shell=True, check=True)
        rate = args.jobs / (time.time() - t0)
        rows.append((f"raw limit: xargs -P2 running {args.jobs} `true` (jobs/s)", f"{rate:.0f}"))

    raw_limit()
    noop = [
        ("noop-sqlite", "SQLite direct", sqlite, False),
        ("noop-server", "server on SQLite", sqlite, True),
        ("noop-pg", "PostgreSQL direct", pg, False),
        ("noop-pg-server", "server on PostgreSQL", pg, True),
    ]
    for _ in range(args.repeat):
        for key, label, make_db, via_server in noop:
            if want(key) and (make_db is sqlite or args.pg):
                rate = noop_rate(make_db(), args.jobs, tmp, via_server)
                rows.append((f"no-op jobs/s, 2 placeholders, {label}", f"{rate:.0f}"))
        if args.repeat > 1 or only:
            raw_limit()
    if want("lattice"):
        n, dt = lattice_time(sqlite(), tmp)
        rows.append((f"{n}-job lattice, 2 placeholders, SQLite direct (s)", f"{dt:.2f}"))
    if want("latency"):
        rows.append(
            ("idle latency submit->done, SQLite direct (ms, median of 20)", f"{idle_latency(sqlite(), tmp) * 1000:.1f}")
        )
    for batch in (1, 10):
        if not want(f"claims{batch}"):
            continue
        for label, db in [("SQLite", sqlite())] + ([("PostgreSQL", pg())] if args.pg else []):
            req, jobs = claims(db, tmp, 20000, batch)
            rows.append(
                (
                    f"claims/s, 100 concurrent clients, batch {batch}, server on {label}",
                    f"{req:.0f} requests/s = {jobs:.0f} jobs/s",
                )
            )
    if pg_admin is not None:
        for name in dbs:
            pg_admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in STARTED:
            if p.poll() is None:
                p.kill()
