"""A site's light install (issue 34): a placeholder in a fresh venv holding only ``pip install metasched`` (no extra)
runs jobs against a metaqueue server, and that venv has none of the heavy packages.

Slow (builds a wheel and a venv; the packages come from pip's local cache when warm): marked ``slow``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metasched.runtime.metaqueue.records import JobSpec
from metasched.runtime.metaqueue.store import Store

ROOT = Path(__file__).resolve().parents[2]
EXTRAS_ONLY = ("numba", "llvmlite", "scipy", "matplotlib", "fastapi", "uvicorn", "starlette", "httpx")

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("base-install")
    wheels = tmp / "wheels"
    pip = [sys.executable, "-m", "pip"]
    run = {"check": True, "capture_output": True, "timeout": 600}
    subprocess.run([*pip, "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)], **run)  # type: ignore[call-overload]
    venv = tmp / "venv"
    # (no pip inside the venv: this one's pip installs into it, which saves a copy of pip per run)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], **run)  # type: ignore[call-overload]
    wheel = next(wheels.glob("metasched-*.whl"))
    subprocess.run([*pip, "--python", str(venv / "bin" / "python"), "install", "-q", str(wheel)], **run)  # type: ignore[call-overload]
    return venv


def test_base_install_has_no_extra(base_venv: Path) -> None:
    probe = f"import importlib.util as u, json; print(json.dumps([m for m in {EXTRAS_ONLY!r} if u.find_spec(m)]))"
    out = subprocess.run(
        [str(base_venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_base_install_command_needing_an_extra_names_it(base_venv: Path, tmp_path: Path) -> None:
    env = {**os.environ, "METASCHED_HOME": str(tmp_path)}
    env.pop("PYTHONPATH", None)
    out = subprocess.run(
        [str(base_venv / "bin" / "metasched"), "server"], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: metasched server needs the 'server' extra (module uvicorn is not installed): "
        "pip install 'metasched[server]'"
    ]


def test_base_install_placeholder_runs_jobs_against_a_server(base_venv: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db)
    ids = store.submit([JobSpec(command=f"echo job{i}", name=f"j{i}") for i in range(3)])
    store.submit([JobSpec(command="echo last", name="last", after=["j0", "j1", "j2"])])
    token = tmp_path / "token"
    port = _free_port()
    env = {**os.environ, "METASCHED_HOME": str(tmp_path / "home")}
    server = subprocess.Popen(
        [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db, "--token-file", str(token)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    err = server.stderr.read() if server.stderr else ""
                    raise AssertionError(f"server did not start: {err}") from None
                time.sleep(0.2)
        site_env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "METASCHED_DB")}
        placeholder = subprocess.run(
            [
                str(base_venv / "bin" / "metasched"),
                "placeholder",
                "--site",
                "light",
                "--server",
                f"http://127.0.0.1:{port}",
                "--token-file",
                str(token),
                "--log-dir",
                str(tmp_path / "logs"),
            ],
            env=site_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert placeholder.returncode == 0, placeholder.stderr
    finally:
        server.terminate()
        server.wait(30)
    jobs = {j["name"]: j for j in store.jobs()}
    store.close()
    assert {name: j["state"] for name, j in jobs.items()} == {n: "done" for n in ("j0", "j1", "j2", "last")}
    assert all(jobs[f"j{i}"]["id"] == ids[i] for i in range(3))
    assert {j["site"] for j in jobs.values()} == {"light"}
