"""Two users against one real ``metasched server`` on PostgreSQL (issue 36): each submits an array and a
workflow through the Python client and through the CLI; neither can see, cancel or read the logs of the
other's jobs (404); a placeholder token cannot submit; a user token cannot claim; an array of 200 with
``%10`` never has more than 10 running (from the store's run history); ``wait`` returns when the jobs end
with the worst exit status; the REASON column says why each queued job waits.

A fresh database and server per test; real placeholders (``metasched placeholder``) run the jobs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from metasched import Client, NotFound
from metasched.runtime.metaqueue.store import Store
from tests.runtime.conftest import pg_database
from tests.runtime.procs import start_logged, stop, wait_http

pytestmark = [pytest.mark.live, pytest.mark.timeout(300)]


@dataclass
class Server:
    url: str
    db: str
    admin: str
    agent: str
    tokens: dict[str, str]
    agent_file: Path
    tmp: Path
    env: dict[str, str]

    def placeholder(self, cpus: int = 4, idle_exit: float = 3.0) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "metasched", "placeholder", "--site", "here", "--server", self.url]
        argv += ["--token-file", str(self.agent_file), "--cpus", str(cpus), "--idle-exit", str(idle_exit)]
        argv += ["--log-dir", str(self.tmp / "logs"), "--max-wait", "0.2"]
        return start_logged(argv, self.env, self.tmp / "placeholder.log")

    def cli(self, user: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "METASCHED_SERVER": self.url, "METASCHED_TOKEN": self.tokens[user]}
        return subprocess.run(
            [sys.executable, "-m", "metasched", *args], env=env, capture_output=True, text=True, timeout=120
        )

    def client(self, user: str) -> Client:
        return Client(self.url, self.tokens[user])


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    gen = pg_database()
    db = next(gen)
    env = {**os.environ, "METASCHED_HOME": str(tmp_path / "home"), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("METASCHED_DB", None)
    tokens = {}
    for user in ("alice", "bob"):
        out = subprocess.run(
            [sys.executable, "-m", "metasched", "user", "add", user, "--db", db],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        tokens[user] = out.stdout.strip()
    port = _port()
    admin_file, agent_file = tmp_path / "admin-token", tmp_path / "agent-token"
    argv = [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db]
    argv += ["--token-file", str(admin_file), "--agent-token-file", str(agent_file), "--lease", "30"]
    proc = start_logged(argv, env, tmp_path / "server.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(proc, f"{url}/openapi.json", tmp_path / "server.log")
        (tmp_path / "logs").mkdir()
        yield Server(
            url, db, admin_file.read_text().strip(), agent_file.read_text().strip(), tokens, agent_file, tmp_path, env
        )
    finally:
        stop(proc)
        for _ in gen:
            pass


def _run_all(server: Server, cpus: int = 4) -> None:
    ph = server.placeholder(cpus)
    try:
        ph.wait(timeout=240)
    finally:
        stop(ph)


def test_two_users_arrays_workflows_and_isolation(server: Server, tmp_path: Path) -> None:
    alice, bob = server.client("alice"), server.client("bob")
    # each user: an array and a workflow through the Python client...
    arr_a = alice.submit("echo a{index}", name="sweep", array="1-5")
    wf_a = alice.submit_workflow(
        [
            {"name": "prep", "command": "echo prep"},
            {"name": "post", "command": "echo post >&2; exit 3", "after": "prep"},
        ]
    )
    arr_b = bob.submit(["sh", "-c", "echo b$METASCHED_ARRAY_INDEX"], name="sweep", array="1-3")  # same names: fine
    # ... and through the CLI
    lines = tmp_path / "inputs.txt"
    lines.write_text("x.dat\ny.dat\n")
    out = server.cli("bob", "submit", "--each-line", str(lines), "--parsable", "--name", "each", "--", "echo {line}")
    assert out.returncode == 0, out.stderr
    each_b = [int(i) for i in out.stdout.split()]
    assert len(each_b) == 2
    wf = tmp_path / "wf.yaml"
    wf.write_text("- {name: prep, command: 'echo bprep'}\n- {name: post, command: 'true', after: [prep]}\n")
    out = server.cli("bob", "submit-workflow", str(wf), "--json")
    assert out.returncode == 0, out.stderr
    wf_b = [j["id"] for j in json.loads(out.stdout)]

    # isolation, before anything runs: listing, show, cancel, logs, wait of the other's job ids are 404
    assert {j.id for j in bob.jobs()} == {*(j.id for j in arr_b), *each_b, *wf_b}
    assert {j.id for j in alice.jobs()} == {*(j.id for j in arr_a), *(j.id for j in wf_a)}
    alice_id = arr_a[0].id
    for user in ("bob",):
        h = {"Authorization": f"Bearer {server.tokens[user]}"}
        for method, path in [
            ("GET", f"/v1/jobs/{alice_id}"),
            ("POST", f"/v1/jobs/{alice_id}/cancel"),
            ("POST", f"/v1/jobs/{alice_id}/retry"),
            ("GET", f"/v1/jobs/{alice_id}/logs"),
        ]:
            r = httpx.request(method, server.url + path, headers=h)
            assert r.status_code == 404, (method, path, r.text)
            assert r.json()["error"]["code"] == "not_found"
        r = httpx.post(server.url + "/v1/jobs/wait", headers=h, json={"jobs": [alice_id], "timeout": 0})
        assert r.status_code == 404
    with pytest.raises(NotFound):
        bob.job(alice_id)
    out = server.cli("bob", "cancel", str(alice_id))
    assert out.returncode == 2 and out.stderr.strip() == f"error: unknown job(s): {alice_id}"
    # bob's "sweep_1" is his own, not alice's
    assert bob.job("sweep_1").id == arr_b[0].id
    # the admin sees both
    admin = Client(server.url, server.admin)
    assert {j.id for j in admin.jobs(name="sweep_*")} == {*(j.id for j in arr_a), *(j.id for j in arr_b)}

    _run_all(server)
    done = alice.wait([*arr_a, *wf_a], timeout=60)
    assert [j.state for j in done] == ["done"] * 6 + ["failed"]
    assert arr_a[2].logs() == "a3\n"
    assert wf_a[1].logs() == "post\n"  # a failed job with only stderr: its stderr
    assert wf_a[1].exit_code == 3
    assert bob.job(arr_b[1].id).logs() == "b2\n"
    assert server.cli("bob", "logs", str(each_b[1])).stdout == "y.dat\n"
    # wait's exit status is the worst job's
    assert server.cli("alice", "wait", "sweep_1", "prep").returncode == 0
    out = server.cli("alice", "wait", "sweep_1", "post", "--json")
    assert out.returncode == 3 and [j["state"] for j in json.loads(out.stdout)] == ["done", "failed"]
    out = server.cli("bob", "status", "--json")
    assert {j["owner"] for j in json.loads(out.stdout)} == {"bob"}


def test_tokens_keep_to_their_role(server: Server) -> None:
    agent = {"Authorization": f"Bearer {server.agent}"}
    job = {"jobs": [{"command": "true"}]}
    r = httpx.post(server.url + "/v1/jobs", headers=agent, json=job)
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    claim = {"placeholder_id": "p", "site": "here", "cpus": 1}
    for who in ("alice", "bob"):
        r = httpx.post(server.url + "/v1/claim", headers={"Authorization": f"Bearer {server.tokens[who]}"}, json=claim)
        assert r.status_code == 401
    assert httpx.post(server.url + "/v1/claim", headers=agent, json=claim).status_code == 200
    r = httpx.post(server.url + "/v1/jobs", headers={"Authorization": "Bearer nope-nope-nope-nope"}, json=job)
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    r = httpx.get(server.url + "/v1/jobs")
    assert r.status_code == 401
    # a removed user's token stops at once
    Store.open(server.db).remove_user("bob")
    r = httpx.get(server.url + "/v1/jobs", headers={"Authorization": f"Bearer {server.tokens['bob']}"})
    assert r.status_code == 401


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        ({"jobs": [{"command": "true", "cpus": 0}]}, 422, "cpus"),
        ({"jobs": [{"command": "true", "time": "1-25"}]}, 422, "bad time"),
        ({"jobs": [{"command": "true"}], "array": "5-1"}, 400, "bad array"),
        ({"jobs": [{"command": "true", "after": "nosuch"}]}, 400, "unknown dependencies: nosuch"),
        ({"jobs": [{"command": "true", "after": "afterfoo:x"}]}, 400, "afterok, afterany or afternotok"),
        ({"jobs": [{"command": "true", "colour": "red"}]}, 422, "colour"),
        ({"jobs": []}, 422, "jobs"),
        ({"jobs": [{"command": "a"}, {"command": "b"}], "array": "1-2"}, 422, "exactly one job"),
    ],
)
def test_user_mistakes_are_json_errors(server: Server, body: dict, code: int, words: str) -> None:
    h = {"Authorization": f"Bearer {server.tokens['alice']}"}
    r = httpx.post(server.url + "/v1/jobs", headers=h, json=body)
    assert r.status_code == code, r.text
    err = r.json()["error"]
    assert set(err) >= {"code", "message"} and words in err["message"]
    r = httpx.get(server.url + "/v1/jobs", headers=h, params={"state": "bogus"})
    assert r.status_code == 400 and "unknown state 'bogus'" in r.json()["error"]["message"]


def test_throttled_array_of_200_never_runs_more_than_10(server: Server) -> None:
    alice = server.client("alice")
    jobs = alice.submit("sleep 0.05", array="1-200%10")
    assert len(jobs) == 200
    _run_all(server, cpus=32)
    assert {j.state for j in alice.wait(jobs, timeout=120)} == {"done"}
    store = Store.open(server.db)
    runs = [(r["start_at"], r["end_at"]) for r in store.jobs(ids=[j.id for j in jobs])]
    # the run history: at no instant more than 10 elements between their start and their end
    edges = sorted([(s, 1) for s, _ in runs] + [(e, -1) for _, e in runs], key=lambda x: (x[0], x[1]))
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    assert 1 < peak <= 10
    store.close()


def test_reason_column(server: Server) -> None:
    """No placeholder runs: each queued job says why it waits; dependents of a cancelled job say so."""
    store = Store.open(server.db)
    store.upsert_site("small", "local", {"cpus": 4, "mem_mb": 1024, "wall_time_s": 3600}, {"matlab": 1})
    store.upsert_site(
        "gone",
        "local",
        {"cpus": 64, "wall_time_s": 7200, "reach": {"state": "down", "since": 1.0, "error": "ssh: timeout"}},
        {},
    )
    alice = server.client("alice")
    first = alice.submit("true", name="first")
    later = alice.submit("true", name="later", after=["first"])
    alice.submit("true", name="lic", licences=["fortran"])
    alice.submit("true", name="huge", cpus=128)
    alice.submit("true", name="big", cpus=16)  # fits only the site that is down
    alice.submit("true", name="long", time="2-00:00:00", cpus=8)
    doomed = alice.submit("true", name="doomed")
    dep = alice.submit("true", name="dep", after=["doomed"])
    doomed.cancel()
    out = server.cli("alice", "status", "--json")
    reasons = {j["name"]: j["reason"] for j in json.loads(out.stdout)}
    assert reasons["first"] == "ready: waiting for a placeholder"
    assert reasons["later"] == f"waiting on job {first.id} (first, queued)"
    assert reasons["lic"] == "needs licence fortran, which no site offers"
    assert reasons["huge"].startswith("no site fits its cpus/mem/time (needs 128 cpus")
    assert reasons["big"] == "site down: gone"
    assert reasons["long"].startswith("no site fits its cpus/mem/time")
    assert reasons["dep"] == "dependency doomed was cancelled"
    assert dep.state == "dep_failed" and later.state == "queued"
    # filters refuse unknown values, in one line
    out = server.cli("alice", "status", "--state", "bogus")
    assert out.returncode == 2 and out.stderr.startswith("error: --state: unknown state 'bogus'")
    out = server.cli("alice", "status", "--owner", "bob")
    assert out.returncode == 2 and "see only your own jobs" in out.stderr
    out = server.cli("alice", "status", "nosuchjob")
    assert out.returncode == 2 and out.stderr.strip() == "error: unknown job(s): nosuchjob"
    out = server.cli("alice", "status", "later", "--json")
    assert [j["name"] for j in json.loads(out.stdout)] == ["later"]
    store.close()
