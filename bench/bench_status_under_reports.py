"""How long ``GET /v1/status`` waits while a token holder floods the server with large reports (issue 33).

A real server (uvicorn, SQLite) on localhost; one client sends reports of N completions back to back while
another polls ``/v1/status`` (N = MAX_REPORT, the most the server takes; the most that fit the body bound,
refused 422 after parsing; 100,000, refused 413 unread); prints each report's answer time and the median and
slowest status answers. Before issue 33 the 100,000 report was taken: ~3 s per report, /v1/status held up to
2.6 s (2-core VM, load ~9).

    .venv/bin/python bench/bench_status_under_reports.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import uvicorn

from metasched.runtime.metaqueue.protocol import MAX_REPORT
from metasched.runtime.metaqueue.service import MAX_BODY_BYTES, create_app
from metasched.runtime.metaqueue.store import Store

TOKEN = "bench-status-token-0123456789"


def _post(url: str, body: bytes) -> int:
    req = urllib.request.Request(
        url, data=body, headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:  # the server answered 413 and closed while the body was still being sent
        return 413


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    store = Store.open(f"sqlite:///{tmp / 'q.db'}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(store, TOKEN), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    now = time.time()
    one = {"job_id": 1, "attempt": 1, "exit_code": 0, "start_at": now - 1, "end_at": now}
    under = MAX_BODY_BYTES // (len(json.dumps(one)) + 2) - 100  # the most completions under the body bound
    for n in (MAX_REPORT, under, 100_000):
        body = json.dumps({"placeholder_id": "p", "results": [one] * n}).encode()
        stop = threading.Event()
        reports: list[tuple[int, float]] = []

        def flood(body: bytes = body, stop: threading.Event = stop, reports: list[tuple[int, float]] = reports) -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                code = _post(base + "/v1/complete", body)
                reports.append((code, time.perf_counter() - t0))

        t = threading.Thread(target=flood, daemon=True)
        t.start()
        waits = []
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            t0 = time.perf_counter()
            req = urllib.request.Request(base + "/v1/status", headers={"Authorization": f"Bearer {TOKEN}"})
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()
            waits.append(time.perf_counter() - t0)
            time.sleep(0.02)
        stop.set()
        t.join(timeout=120)
        codes = sorted({c for c, _ in reports})
        print(
            f"reports of {n:>7} completions ({len(body) / 1e6:.1f} MB, answered {codes}, "
            f"median {statistics.median(d for _, d in reports) * 1000:.0f} ms): /v1/status median "
            f"{statistics.median(waits) * 1000:.1f} ms, max {max(waits) * 1000:.1f} ms over {len(waits)} polls"
        )
    server.should_exit = True


if __name__ == "__main__":
    main()
