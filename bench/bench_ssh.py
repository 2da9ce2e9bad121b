"""Remote sites over SSH (issue 9): submission throughput and claim latency, multiplexed vs one ssh per command.

Needs the SSH testbed (``scripts/testbed/sshd.sh``, root). Measures, in one run:

1. submitting N placeholders to the loopback test host: each is one command that writes the
   placeholder script from stdin and submits it (real ``sbatch --hold`` when a Slurm is reachable
   there, else an sbatch-like ``cat > script; echo id``), over one ControlMaster connection vs one
   ``ssh`` process (and TCP connection and key exchange) per command;
2. a placeholder's claim over the SSH transport (restricted key, forced-command gateway) in the
   three modes of :class:`~metasched.runtime.remote.client.SshProtocolClient`, against the real
   metaqueue server when it is importable, else against a stand-in that answers at once (then only
   the transport is measured, and the output says so).

Usage: ``PYTHONPATH=src python bench/bench_ssh.py [--n 100] [--claims 50] [--json out.json]``
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metasched.runtime.remote.client import SshProtocolClient
from metasched.runtime.remote.keys import authorized_keys_line, gateway_command, generate_keypair
from metasched.runtime.remote.runner import CommandResult, execute, run_many
from metasched.runtime.remote.ssh import SshRunner, SshTarget

REPO = Path(__file__).resolve().parents[1]
SSHD = REPO / "scripts" / "testbed" / "sshd.sh"


def testbed() -> dict[str, Any]:
    hosts = Path(os.environ.get("METASCHED_SSH_TESTBED", "/tmp/testbed/ssh/hosts.json"))
    if not hosts.is_file():
        subprocess.run(["bash", str(SSHD), "all"], check=True)
    return dict(json.loads(hosts.read_text()))


def target(tb: dict[str, Any], **over: Any) -> SshTarget:
    h = tb["hosts"]["lo"]
    kw: dict[str, Any] = {
        "host": h["host"],
        "port": h["port"],
        "user": tb["user"],
        "identity_file": Path(tb["key"]),
        "known_hosts": Path(tb["known_hosts"]),
        "host_key_policy": "yes",
        "ssh_config": tb["ssh_config"],
    }
    kw.update(over)
    return SshTarget(**kw)


def slurm_conf() -> str | None:
    for cand in (os.environ.get("SLURM_CONF"), "/tmp/metasched-testbed/slurm/etc/slurm.conf"):
        if cand and Path(cand).is_file() and shutil.which("sbatch"):
            return cand
    return None


PARALLEL = 8
SCRIPT = "#!/bin/sh\n#SBATCH --job-name=ms-bench-ssh\n#SBATCH --output=/dev/null\nexec true\n"


def submit_command(workdir: str, i: int, conf: str | None) -> str:
    path = f"{workdir}/ph-{i}.sh"
    if conf:
        return f"cat > {path} && SLURM_CONF={conf} sbatch --parsable --hold {path}"
    return f"cat > {path} && chmod +x {path} && echo {1000 + i}"


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_submit(tb: dict[str, Any], n: int, conf: str | None) -> dict[str, Any]:
    t = target(tb)
    out: dict[str, Any] = {
        "n": n,
        "what": "sbatch --hold (real Slurm)" if conf else "sbatch-like (cat > script; echo id)",
    }
    runner = SshRunner(t)
    ids: list[str] = []
    try:
        out["connect_s"] = timed(runner.connect)
        workdir = runner.run("mktemp -d", check=True).stdout.strip()

        def mux() -> None:
            for i in range(n):
                ids.append(runner.run(submit_command(workdir, i, conf), input=SCRIPT, check=True).stdout.strip())

        out["mux_s"] = timed(mux)

        def mux_parallel() -> None:
            cmds = [submit_command(workdir, 2 * n + i, conf) for i in range(n)]
            for res in run_many(runner, cmds, inputs=[SCRIPT] * n, parallel=PARALLEL):
                if not isinstance(res, CommandResult) or not res.ok:
                    raise RuntimeError(str(res))
                ids.append(res.stdout.strip())

        out["mux_parallel_s"] = timed(mux_parallel)
        out["parallel"] = PARALLEL
        plain_argv = ["ssh", *t.options_argv(), "-p", str(t.port), t.destination, "--"]

        def plain() -> None:
            for i in range(n):
                res = execute(
                    [*plain_argv, submit_command(workdir, n + i, conf)],
                    timeout_s=60,
                    input=SCRIPT,
                    target=t.label,
                    shown="submit",
                )
                if res.returncode != 0:
                    raise RuntimeError(res.stderr)
                ids.append(res.stdout.strip())

        out["plain_s"] = timed(plain)
        out["ratio_plain_over_mux"] = out["plain_s"] / out["mux_s"]
        if conf:
            runner.run(f"SLURM_CONF={conf} scancel {' '.join(x.split(';')[0] for x in ids)}", timeout_s=120)
        runner.run(["rm", "-rf", workdir])
    finally:
        runner.dispose()
    return out


def bench_adapter(tb: dict[str, Any], n: int, conf: str) -> dict[str, Any]:
    """The site manager's own path: SlurmAdapter.submit (script written over SSH, then sbatch) x n."""
    from concurrent.futures import ThreadPoolExecutor

    from metasched.runtime.batch import PlaceholderSpec, SlurmAdapter

    runner = SshRunner(target(tb, options={"SetEnv": f"SLURM_CONF={conf}"}))
    out: dict[str, Any] = {"n": n}
    try:
        runner.connect()
        adapter = SlurmAdapter(workdir="metasched-bench-ph", extra_args=["--hold"], runner=runner)
        specs = [PlaceholderSpec(f"bench-{i}", ["true"]) for i in range(2 * n)]
        ids: list[str] = []
        out["sequential_s"] = timed(lambda: ids.extend(adapter.submit(sp) for sp in specs[:n]))
        with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
            out["parallel_s"] = timed(lambda: ids.extend(pool.map(adapter.submit, specs[n:])))
        out["parallel"] = PARALLEL
        adapter.cancel(ids)
        runner.run(["rm", "-rf", "metasched-bench-ph"])
    finally:
        runner.dispose()
    return out


# -- claims ---------------------------------------------------------------------------------------


@contextmanager
def metaqueue_server(jobs: int) -> Iterator[tuple[str, str, str]]:
    """(url, token, kind): the real server if this checkout has it, else a stand-in answering WAIT at once."""
    token = "bench-token-0123456789"
    try:
        import uvicorn  # noqa: F401

        from metasched.runtime.metaqueue.records import JobSpec  # type: ignore[import-not-found]
        from metasched.runtime.metaqueue.service import create_app  # type: ignore[import-not-found]
        from metasched.runtime.metaqueue.store import Store  # type: ignore[import-not-found]
    except ImportError:
        yield from _stand_in(token)
        return
    yield from _real_server(token, jobs, Store, JobSpec, create_app)


def _stand_in(token: str) -> Iterator[tuple[str, str, str]]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.dumps({"action": "wait", "jobs": []}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", token, "stand-in (transport only)"
    finally:
        server.shutdown()


def _real_server(
    token: str, jobs: int, store_cls: Any, spec_cls: Any, create_app: Any
) -> Iterator[tuple[str, str, str]]:
    import socket

    import uvicorn

    tmp = Path(tempfile.mkdtemp(prefix="bench-mq-"))
    store = store_cls.open(f"sqlite:///{tmp / 'mq.db'}")
    store.submit([spec_cls(command="true", name=f"j{i}") for i in range(jobs)])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(create_app(store, token), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", token, "real metaqueue server (SQLite store)"
    finally:
        server.should_exit = True
        thread.join(10)
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def restricted_key(tb: dict[str, Any], url: str, token: str) -> Iterator[Path]:
    from metasched.runtime.remote import gateway

    work = Path(tempfile.mkdtemp(prefix="gw-", dir=tb["dir"]))
    work.chmod(0o755)
    keys = Path(tempfile.mkdtemp(prefix="key-"))
    auth = Path(tb["dir"]) / "auth" / tb["user"]
    line = ""
    try:
        shutil.copy(gateway.__file__, work / "gateway.py")
        (work / "gateway.py").chmod(0o644)
        (work / "token").write_text(token + "\n")
        (work / "token").chmod(0o644)
        pub = generate_keypair(keys / "ph")
        cmd = gateway_command(
            url=url, token_file=work / "token", site="bench", python="/usr/bin/python3", gateway=work / "gateway.py"
        )
        line = authorized_keys_line(pub.read_text(), cmd)
        with open(auth, "a") as fh:
            fh.write(line + "\n")
        yield keys / "ph"
    finally:
        if line:
            auth.write_text("".join(ln + "\n" for ln in auth.read_text().splitlines() if ln != line))
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(keys, ignore_errors=True)


def bench_claims(tb: dict[str, Any], claims: int) -> dict[str, Any]:
    out: dict[str, Any] = {"claims": claims}
    with metaqueue_server(jobs=3 * claims) as (url, token, kind), restricted_key(tb, url, token) as key:
        out["server"] = kind
        t = target(tb, identity_file=key)
        for mode, n in (("session", claims), ("mux", claims), ("plain", max(10, claims // 3))):
            client = SshProtocolClient(t, mode=mode)  # type: ignore[arg-type]
            try:
                hello = {"placeholder_id": f"bench-{mode}", "cpus": 1}
                first = timed(lambda c=client, b=hello: c.call("claim", b))
                lat = []
                for i in range(n):
                    body = {"placeholder_id": f"bench-{mode}-{i}", "cpus": 1, "mem_mb": 0, "limit": 1}
                    lat.append(timed(lambda c=client, b=body: c.call("claim", b)))
            finally:
                client.close()
            out[mode] = {
                "n": n,
                "first_s": first,
                "median_s": statistics.median(lat),
                "p90_s": sorted(lat)[int(0.9 * (n - 1))],
            }
        out["ratio_plain_over_session"] = out["plain"]["median_s"] / out["session"]["median_s"]
        out["ratio_plain_over_mux"] = out["plain"]["median_s"] / out["mux"]["median_s"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="placeholders to submit per mode")
    ap.add_argument("--claims", type=int, default=50, help="claims per mode")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()
    tb = testbed()
    conf = slurm_conf()
    load = os.getloadavg()
    submit = bench_submit(tb, args.n, conf)
    adapter = bench_adapter(tb, args.n, conf) if conf else None
    claims = bench_claims(tb, args.claims)
    result = {
        "loadavg_before": load,
        "submit": submit,
        "adapter": adapter,
        "claims": claims,
        "python": sys.version.split()[0],
    }
    print(json.dumps(result, indent=2))
    s, c = submit, claims
    print(
        f"\nsubmit {s['n']} ({s['what']}): one master {s['mux_s']:.2f} s (+ connect {s['connect_s']:.2f} s), "
        f"{s['parallel']} channels in parallel {s['mux_parallel_s']:.2f} s, "
        f"one ssh per command {s['plain_s']:.2f} s, ratio {s['ratio_plain_over_mux']:.1f}x"
    )
    if adapter:
        print(
            f"SlurmAdapter.submit x {adapter['n']} over SSH (site manager path): sequential "
            f"{adapter['sequential_s']:.2f} s, {adapter['parallel']} in parallel {adapter['parallel_s']:.2f} s"
        )
    print(
        f"claim median [{c['server']}]: session {c['session']['median_s'] * 1000:.1f} ms, "
        f"mux {c['mux']['median_s'] * 1000:.1f} ms, plain {c['plain']['median_s'] * 1000:.1f} ms"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
