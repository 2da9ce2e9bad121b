"""Every user mistake of the issue-36 commands is one clear line and exit status 2, nothing submitted
(embedded database; the server's JSON errors are in tests/runtime/test_users_server.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.runtime.metaqueue.store import Store


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.txt").write_text("\n \n")
    return f"sqlite:///{tmp_path / 'q.db'}"


def run(db: str, *args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, [*args, "--db", db] if "--" not in args else _with_db(args, db))
    return r.exit_code, r.output


def _with_db(args: tuple[str, ...], db: str) -> list[str]:
    i = args.index("--")
    return [*args[:i], "--db", db, *args[i:]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("submit", "--array", "5-1", "--", "true"), "error: bad array '5-1': in A-B:STEP, A <= B and STEP >= 1"),
        (("submit", "--array", "1-3%0", "--", "true"), "error: bad array '1-3%0': after % comes the most"),
        (("submit", "--array", "1-3", "--each-line", "empty.txt", "--", "true"), "error: give --array or --each-line"),
        (("submit", "--each-line", "nope.txt", "--", "true"), "error: cannot read --each-line nope.txt"),
        (("submit", "--each-line", "empty.txt", "--", "true"), "error: --each-line empty.txt: no line"),
        (("submit", "--after", "afterfoo:a", "--", "true"), "error: bad dependency 'afterfoo:a'"),
        (("submit", "--after", "a,afterany:a", "--", "true"), "given twice with different kinds"),
        (("submit", "--after", "nosuch", "--", "true"), "error: unknown dependencies: nosuch"),
        (("submit", "--time", "1-24", "--", "true"), "error: --time: bad time '1-24'"),
        (("submit", "--time", "soon", "--", "true"), "error: --time: bad time 'soon'"),
        (("status", "--state", "bogus"), "error: --state: unknown state 'bogus'"),
        (("status", "--owner", "nobody"), "error: unknown owner 'nobody': one of admin"),
        (("status", "nosuch"), "error: unknown job(s): nosuch"),
        (("show", "42"), "error: unknown job(s): 42"),
        (("wait", "nosuch"), "error: unknown job(s): nosuch"),
        (("logs", "nosuch"), "error: unknown job(s): nosuch"),
        (("user", "add", "9lives"), "error: bad user name '9lives'"),
        (("user", "add", "admin"), "error: 'admin' is the server token's identity"),
        (("user", "remove", "ghost"), "error: unknown user 'ghost'"),
    ],
)
def test_mistake_is_one_line(db: str, args: tuple[str, ...], message: str) -> None:
    code, out = run(db, *args)
    assert code == 2, out
    assert out.count("\n") == 1 and out.startswith("error: ") and message in out, out
    assert "Traceback" not in out
    assert Store.open(db).jobs() == []  # nothing submitted


def test_logs_of_a_queued_job_and_a_server_without_token(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(db, "submit", "--name", "a", "--", "true")[0] == 0
    code, out = run(db, "logs", "a")
    assert code == 2 and out.strip() == "error: job a is queued: no output recorded yet (stdout)"
    monkeypatch.delenv("METASCHED_TOKEN", raising=False)
    monkeypatch.delenv("METASCHED_TOKEN_FILE", raising=False)
    r = CliRunner().invoke(app, ["status", "--server", "http://127.0.0.1:9"])
    assert r.exit_code == 2 and r.output.startswith("error: a server needs a token")
    r = CliRunner().invoke(app, ["status", "--server", "http://127.0.0.1:9", "--db", db])
    assert r.exit_code == 2 and r.output.strip() == "error: give --db or --server, not both"


def test_parsable_json_and_wait_exit_status(db: str) -> None:
    code, out = run(db, "submit", "--parsable", "--array", "1-3", "--", "true")
    assert code == 0 and out.split() == ["1", "2", "3"]
    code, out = run(db, "submit", "--json", "--name", "x", "--time", "90", "--", "true")
    (job,) = json.loads(out)
    assert code == 0 and job["name"] == "x" and job["time_s"] == 5400 and job["reason"]
    assert run(db, "cancel", "x")[0] == 0
    code, out = run(db, "wait", "x", "--json")
    assert code == 1 and json.loads(out)[0]["state"] == "cancelled"
    code, out = run(db, "wait", "1", "--timeout", "0.2")
    assert code == 124 and "still running after 0.2 s: 1" in out


def test_an_array_is_one_job_and_its_elements(db: str) -> None:
    """Client.submit(..., array=...) -> Job: a JobArray standing for its elements (state, cancel, ids)."""
    from metasched import Client
    from metasched.client import Job, JobArray

    client = Client(db=db)
    arr = client.submit("echo {index}", name="s", array="1-3%2")
    assert isinstance(arr, Job) and isinstance(arr, JobArray)
    assert (len(arr), arr.id, [j.name for j in arr], arr[2].name) == (3, arr[0].id, ["s_1", "s_2", "s_3"], "s_3")
    assert arr.state == "queued" and arr.exit_code is None
    assert arr.cancel() and arr.state == "cancelled"
    assert {j.state for j in arr} == {"cancelled"}
    assert arr.retry() and arr.state == "queued"
    client.close()
