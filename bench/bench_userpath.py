"""The user's path against the warm path (issue 34): a benchmark, not a test. From the repository root:

    python bench/bench_userpath.py [--jobs 10000] [--reps 5] [--pg postgresql://...] [--peers PYTHON] [--skip ROWS]

Rows (one sitting; on a shared machine compare ratios, not absolute figures):

* start-up: wall and CPU of ``metasched --help``, ``metasched status``, ``metasched submit -- true`` and a
  placeholder that starts, finds nothing and leaves, against
  ``python -c "import typer"`` (median of ``--reps``, interleaved);
* warm: 2 standing placeholders (``--linger``, SQLite), jobs submitted from Python: N no-op jobs (jobs/s from
  the submission to the last job's end, CPU ms per job of every process involved), the 1,024-job lattice;
* user: the documented path, ``metasched submit-workflow FILE`` then ``metasched sites run --until-idle``
  (one local site of 2 slots), from the first command's start to the last job's end; same N and lattice;
* floor: two Python threads running ``sh -c true``;
* idle submit-to-done: ``metasched submit -- true`` with ``metasched sites run`` already running (to the job's
  end, the CLI's own start included), and from Python with one standing placeholder on SQLite and PostgreSQL;
* peers: ``bench/peers/*.py`` run with ``--peers PYTHON`` (a venv with parsl, dask[distributed], hyperqueue).

Prints a markdown table and a JSON line with every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

sys.path.insert(0, str(ROOT / "bench" / "peers"))

from _common import tree_cpu_s  # noqa: E402
from tests.runtime.lattice import lattice  # noqa: E402

from metasched.runtime.metaqueue.store import JobSpec, Store  # noqa: E402

# The command server (metasched.cli.launch) gets a runtime directory of this run's own; a command runs in its own
# process unless a row says otherwise ("server": METASCHED_CMDSERVER=require, the CPU of the server's forks counted).
RUNTIME = Path(tempfile.mkdtemp(prefix="ms-bench-", dir="/tmp"))
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "XDG_RUNTIME_DIR": str(RUNTIME), "METASCHED_CMDSERVER": "0"}
ENV.pop("METASCHED_DB", None)
METASCHED = [sys.executable, "-m", "metasched"]


def cpu_s() -> float:
    """CPU (user + system) of this process and every child it has waited for."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run(cmd: list[str], env: dict[str, str], timeout: float = 600) -> tuple[float, float]:
    """Wall and CPU seconds of one command (run to its end)."""
    c0, t0 = cpu_s(), time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=timeout)
    return time.perf_counter() - t0, cpu_s() - c0


def server_cpu_s() -> float:
    """CPU seconds of the command server and the forks it has reaped (0 when none runs)."""
    total = 0.0
    for pidfile in RUNTIME.glob("metasched/*.pid"):
        with contextlib.suppress(OSError, ValueError):
            fields = Path(f"/proc/{int(pidfile.read_text())}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def run_served(cmd: list[str], env: dict[str, str], timeout: float = 600) -> tuple[float, float]:
    """:func:`run` through the command server: the CPU of this client, the session and the command."""
    s0 = server_cpu_s()
    wall, cpu = run(cmd, env, timeout)
    time.sleep(0.05)  # (the server reaps its forks on SIGCHLD)
    return wall, cpu + server_cpu_s() - s0


def start_server(env: dict[str, str]) -> None:
    """The first served command starts the server; wait until it answers."""
    subprocess.run([*METASCHED, "version"], env={**env, "METASCHED_CMDSERVER": "1"}, stdout=subprocess.DEVNULL)
    for _ in range(600):
        probe = subprocess.run(
            [*METASCHED, "version"], env={**env, "METASCHED_CMDSERVER": "require"}, capture_output=True
        )
        if probe.returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError("the command server did not start")


def stop_servers() -> None:
    import shutil
    import signal

    for pidfile in RUNTIME.glob("metasched/*.pid"):
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
    time.sleep(0.5)
    shutil.rmtree(RUNTIME, ignore_errors=True)


def startup(home: Path, reps: int) -> dict[str, dict[str, float]]:
    env = {**ENV, "METASCHED_HOME": str(home)}
    subprocess.run([*METASCHED, "submit", "--", "true"], env=env, check=True, stdout=subprocess.DEVNULL)
    Store.open(f"sqlite:///{home / 'idle.db'}").close()  # (migrated here, not in the first placeholder's time)
    start_server(env)
    served = {**env, "METASCHED_CMDSERVER": "require"}
    cmds = {
        'python -c "import typer"': [sys.executable, "-c", "import typer"],
        "metasched --help": [*METASCHED, "--help"],
        "metasched status": [*METASCHED, "status"],
        "metasched submit -- true": [*METASCHED, "submit", "--", "true"],
        "metasched --help (server)": [*METASCHED, "--help"],
        "metasched status (server)": [*METASCHED, "status"],
        "metasched submit -- true (server)": [*METASCHED, "submit", "--", "true"],
        # a placeholder's own start and leave, nothing to run (what `sites run` pays per placeholder)
        "metasched placeholder (start, idle, leave)": [
            *METASCHED,
            *("placeholder", "--site", "local", "--idle-exit", "0", "--log-dir", str(home / "logs")),
            *("--db", f"sqlite:///{home / 'idle.db'}"),
        ],
    }
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    for _ in range(reps):
        for name, cmd in cmds.items():
            got[name].append(run_served(cmd, served) if name.endswith("(server)") else run(cmd, env))
    return {
        k: {"wall_s": statistics.median(w for w, _ in v), "cpu_s": statistics.median(c for _, c in v)}
        for k, v in got.items()
    }


def wait_done(store: Store, total: int, timeout_s: float = 900) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        c = store.counts()
        if c.get("done", 0) + c.get("failed", 0) + c.get("dep_failed", 0) >= total:
            return
        time.sleep(0.02)
    raise TimeoutError(str(store.counts()))


def last_end(store: Store) -> float:
    return max(j["end_at"] for j in store.jobs() if j["end_at"] is not None)


@contextlib.contextmanager
def standing(db: str, home: Path, n: int) -> Iterator[None]:
    """``n`` lingering placeholders, warmed by one job each."""
    env = {**ENV, "METASCHED_HOME": str(home)}
    cmd = [*METASCHED, "placeholder", "--site", "local", "--db", db, "--linger", "--log-dir", str(home / "logs")]
    procs = [subprocess.Popen(cmd, env=env) for _ in range(n)]
    store = Store.open(db)
    store.submit([JobSpec("true") for _ in range(n)])
    wait_done(store, n, 120)
    store.close()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)


def warm(db: str, home: Path, specs: list[JobSpec]) -> tuple[float, float]:
    """Seconds from the submission to the last job's end, and CPU seconds, with 2 standing placeholders."""
    with standing(db, home, 2):
        store = Store.open(db)
        before = store.counts().get("done", 0)
        c0, t0 = tree_cpu_s(), time.time()
        store.submit(specs)
        wait_done(store, before + len(specs))
        cpu = tree_cpu_s() - c0  # (the standing placeholders' and their jobs' CPU, ours; not their start-up)
        span = last_end(store) - t0
        store.close()
    return span, cpu


def user(db: str, home: Path, specs: list[JobSpec], workdir: Path) -> tuple[float, float]:
    """The documented path: ``submit-workflow`` then ``sites run --until-idle``; from the first command's start
    to the last job's end, and CPU seconds."""
    import yaml

    wf = workdir / "workflow.yaml"
    wf.write_text(yaml.safe_dump([{"name": s.name, "command": s.command, "after": s.after} for s in specs]))
    env = {**ENV, "METASCHED_HOME": str(home), "METASCHED_DB": db}
    start_server(env)  # (the user's default: submit-workflow through the command server, its CPU counted)
    c0, s0, t0 = cpu_s(), server_cpu_s(), time.time()
    # (in workdir: the jobs run, and leave their output, in the submitter's directory)
    subprocess.run(
        [*METASCHED, "submit-workflow", str(wf)],
        env={**env, "METASCHED_CMDSERVER": "require"},
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=workdir,
    )
    subprocess.run([*METASCHED, "sites", "run", "--until-idle"], env=env, check=True, timeout=1800, cwd=workdir)
    store = Store.open(db)
    span = last_end(store) - t0
    store.close()
    return span, cpu_s() - c0 + server_cpu_s() - s0


def floor(n: int) -> tuple[float, float]:
    """Two threads running ``sh -c true`` n times in all."""
    left = [n]
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            subprocess.run(["sh", "-c", "true"], check=True)

    c0, t0 = cpu_s(), time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, cpu_s() - c0


def idle_cli(home: Path, reps: int, served: bool, linger: str | None = None) -> float:
    """Median ms from starting ``metasched submit -- true`` (through the command server when ``served``) to the
    job's end, ``sites run`` already running on the default local site (its placeholder idle for 2 s, lingering:
    ``linger`` defaults to 60 s on a local site; ``--idle-linger 0`` measures a site whose placeholders leave)."""
    db = f"sqlite:///{home / 'idle-cli.db'}"
    env = {**ENV, "METASCHED_HOME": str(home), "METASCHED_DB": db}
    submit_env = {**env, "METASCHED_CMDSERVER": "require" if served else "0"}
    if served:
        start_server(env)
    Store.open(db).close()
    config = []
    if linger is not None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "sites.toml").write_text(f'[sites.local]\nadapter = "local"\nlimit = 2\nlinger = "{linger}"\n')
        config = ["--config", str(home / "sites.toml")]
    manager = subprocess.Popen([*METASCHED, "sites", "run", *config], env=env, stderr=subprocess.DEVNULL, cwd=home)
    store = Store.open(db)
    lat = []
    try:
        time.sleep(3)
        for i in range(reps):
            t0 = time.time()
            subprocess.run(
                [*METASCHED, "submit", "--", "true"], env=submit_env, check=True, stdout=subprocess.DEVNULL, cwd=home
            )
            wait_done(store, i + 1, 120)
            lat.append(1000 * (last_end(store) - t0))
            time.sleep(2)  # (idle: the site's placeholder lingers, sites.toml `linger`, 60 s on a local site)
    finally:
        manager.terminate()
        manager.wait(60)
        store.close()
    return statistics.median(lat)


def idle_api(db: str, home: Path, reps: int) -> float:
    """Median ms from a Python submission to the job's end, one standing placeholder waiting."""
    with standing(db, home, 1):
        store = Store.open(db)
        done = store.counts().get("done", 0)
        lat = []
        for i in range(reps):
            time.sleep(0.3)
            t0 = time.time()
            (jid,) = store.submit([JobSpec("true")])
            wait_done(store, done + i + 1, 60)
            lat.append(1000 * (store.job(str(jid))["end_at"] - t0))
        store.close()
    return statistics.median(lat)


@contextlib.contextmanager
def pg_database(url: str) -> Iterator[str]:
    import psycopg

    name = f"bench_userpath_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def peers(python: str, n: int, reps: int) -> list[dict[str, Any]]:
    out = []
    # (Parsl starts its interchange from PATH)
    env = {**os.environ, "PATH": f"{Path(python).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for script in sorted((ROOT / "bench" / "peers").glob("[a-z]*.py")):
        with tempfile.TemporaryDirectory() as cwd:  # (HyperQueue writes each task's N.stdout / N.stderr there)
            proc = subprocess.run(
                [python, str(script), "--jobs", str(n), "--reps", str(reps)],
                capture_output=True,
                text=True,
                timeout=1800,
                env=env,
                cwd=cwd,
            )
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode == 0 and lines:
            out.append(json.loads(lines[-1]))
        else:
            out.append({"peer": script.stem, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]})
    return out


def timed(label: str, fn: Callable[[], Any]) -> Any:
    t0 = time.perf_counter()
    result = fn()
    print(f"  {label}: {result} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--pg", default=os.environ.get("METASCHED_TEST_PG_URL"))
    parser.add_argument("--peer-jobs", type=int, help="N for the peers (default: --jobs).")
    parser.add_argument("--peers", help="Python of a venv holding the peers (parsl, dask[distributed], hyperqueue).")
    parser.add_argument("--skip", default="", help="Comma-separated: startup,warm,user,floor,idle,peers.")
    parser.add_argument(
        "--src", type=Path, help="Measure the metasched at SRC (a checkout's src/; default: this one's), e.g. main's."
    )
    args = parser.parse_args()
    if args.src is not None:
        ENV["PYTHONPATH"] = str(args.src.resolve())
    skip = set(args.skip.split(","))
    n = args.jobs
    res: dict[str, Any] = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "jobs": n,
        "src": ENV["PYTHONPATH"],
    }
    noop = [JobSpec("true") for _ in range(n)]
    lat = lattice(32, "true")
    with contextlib.ExitStack() as stack:
        stack.callback(stop_servers)
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if "startup" not in skip:
            res["startup"] = timed("startup", lambda: startup(tmp / "startup", args.reps))
        if "warm" not in skip:
            res["warm_noop"] = timed("warm noop", lambda: warm(f"sqlite:///{tmp / 'w1.db'}", tmp / "w1", noop))
            res["warm_lattice"] = timed("warm lattice", lambda: warm(f"sqlite:///{tmp / 'w2.db'}", tmp / "w2", lat))
        if "user" not in skip:
            for key, specs in (("user_noop", [JobSpec("true", name=f"j{i}") for i in range(n)]), ("user_lattice", lat)):
                work = tmp / key
                work.mkdir()
                res[key] = timed(key, lambda w=work, s=specs: user(f"sqlite:///{w / 'q.db'}", w, s, w))  # type: ignore[misc]
        if "floor" not in skip:
            res["floor_noop"] = timed("floor", lambda: floor(n))
        if "idle" not in skip:
            res["idle_cli_ms"] = timed("idle cli", lambda: idle_cli(tmp / "idle-cli", args.reps, served=False))
            res["idle_cli_server_ms"] = timed(
                "idle cli (server)", lambda: idle_cli(tmp / "idle-cli-s", args.reps, served=True)
            )
            res["idle_cli_server_nolinger_ms"] = timed(
                "idle cli (server, linger 0)",
                lambda: idle_cli(tmp / "idle-cli-s0", args.reps, served=True, linger="0"),
            )
            res["idle_api_sqlite_ms"] = timed(
                "idle api sqlite", lambda: idle_api(f"sqlite:///{tmp / 'i.db'}", tmp / "i", 4 * args.reps)
            )
            if args.pg:
                with pg_database(args.pg) as url:
                    res["idle_api_pg_ms"] = timed("idle api pg", lambda: idle_api(url, tmp / "ipg", 4 * args.reps))
        if "peers" not in skip and args.peers:
            res["peer_jobs"] = args.peer_jobs or n
            res["peers"] = timed("peers", lambda: peers(args.peers, res["peer_jobs"], args.reps))
    report(res)
    print(json.dumps(res))


def report(res: dict[str, Any]) -> None:
    n = res["jobs"]
    print(f"machine: {res['machine']}; {res['date']}; N = {n} no-op jobs, lattice = 1,024 jobs; {res['src']}\n")
    if "startup" in res:
        base = res["startup"]['python -c "import typer"']["wall_s"]
        print("| command | wall ms | CPU ms | wall / `import typer` |\n| --- | --- | --- | --- |")
        for k, v in res["startup"].items():
            print(f"| `{k}` | {1000 * v['wall_s']:.0f} | {1000 * v['cpu_s']:.0f} | {v['wall_s'] / base:.1f}x |")
        print()
    print("| path | no-op jobs/s | CPU ms/job | 1,024-job lattice s | idle submit-to-done ms |")
    print("| --- | --- | --- | --- | --- |")

    def row(label: str, noop: Any, lat: Any, idle: str) -> None:
        rate = f"{n / noop[0]:.0f}" if noop else "-"
        cpu = f"{1000 * noop[1] / n:.2f}" if noop else "-"
        print(f"| {label} | {rate} | {cpu} | {f'{lat[0]:.2f}' if lat else '-'} | {idle} |")

    api = [f"{res[k]:.0f} ({k.split('_')[2]})" for k in ("idle_api_sqlite_ms", "idle_api_pg_ms") if k in res]
    row("metasched warm (2 standing placeholders, Python submit)", res.get("warm_noop"), res.get("warm_lattice"),
        ", ".join(api) or "-")  # fmt: skip
    cli = (
        f"{res['idle_cli_server_ms']:.0f} (`metasched submit` with the command server; {res['idle_cli_ms']:.0f} "
        f"in its own process; {res['idle_cli_server_nolinger_ms']:.0f} served, `linger = 0`; `sites run` running)"
        if "idle_cli_ms" in res
        else "-"
    )
    row("metasched user path (`submit-workflow` + `sites run --until-idle`)", res.get("user_noop"),
        res.get("user_lattice"), cli)  # fmt: skip
    for p in res.get("peers", []):
        if "error" in p:
            print(f"| {p['peer']} | could not run: {p['error']} | | | |")
        else:
            label = f"{p['peer']} (N = {res['peer_jobs']})"
            row(label, (n / p["jobs_per_s"], p["cpu_ms_per_job"] * n / 1000), (p.get("lattice_s"),) if
                p.get("lattice_s") else None, f"{p['idle_ms']:.0f}" if p.get("idle_ms") else "-")  # fmt: skip
    row("two Python threads running `sh -c true` (the floor)", res.get("floor_noop"), None, "-")
    if "warm_noop" in res and "user_noop" in res:
        print(
            f"\nuser path / warm: jobs/s {res['warm_noop'][0] / res['user_noop'][0]:.0%} (target >= 80%), lattice "
            f"{res['user_lattice'][0] / res['warm_lattice'][0]:.2f}x (target <= 1.5x)"
        )


if __name__ == "__main__":
    main()
