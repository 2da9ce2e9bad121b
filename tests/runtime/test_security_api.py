"""Issue 33, security: no way in without the token, every body bounded and typed, 422 (never 500) for bad input."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metasched.runtime.metaqueue.protocol import MAX_HOLDING, MAX_REPORT, ensure_token, read_token
from metasched.runtime.metaqueue.secure import MIN_TOKEN_CHARS, TokenError, bearer_credentials, write_private
from metasched.runtime.metaqueue.service import MAX_BODY_BYTES, GroupCommit, create_app
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.runtime.remote import gateway

TOKEN = "t" * 20 + "-sekrit-token"
GOOD = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    yield s
    s.close()


# --- tokens ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["", "x", "y" * (MIN_TOKEN_CHARS - 1)])
def test_the_server_refuses_an_empty_or_short_token(store: Store, token: str) -> None:
    with pytest.raises(TokenError, match=str(MIN_TOKEN_CHARS)):
        create_app(store, token)
    with pytest.raises(TokenError, match=str(MIN_TOKEN_CHARS)):
        create_app(store, TOKEN, dashboard_token=token)


def test_an_empty_token_file_is_refused_not_taken_as_no_auth(tmp_path: Path) -> None:
    empty = tmp_path / "t"
    empty.write_text("\n")
    with pytest.raises(TokenError, match=f"empty, in {empty}"):
        ensure_token(empty)
    with pytest.raises(TokenError, match="at least 16"):
        read_token(empty)
    short = tmp_path / "short"
    short.write_text("abc\n")
    with pytest.raises(TokenError, match="3 characters"):
        ensure_token(short)


def test_an_empty_token_in_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METASCHED_TOKEN", "")
    with pytest.raises(TokenError, match="METASCHED_TOKEN"):
        read_token()


def test_token_is_written_atomically_0600_and_racing_creators_agree(tmp_path: Path) -> None:
    path = tmp_path / "token"
    old = os.umask(0o022)
    try:
        got: list[str] = []
        threads = [threading.Thread(target=lambda: got.append(ensure_token(path))) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    finally:
        os.umask(old)
    assert len(got) == 8 and len(set(got)) == 1 and len(got[0]) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["token"]  # no temporary file left behind
    # Replacing is atomic too, and keeps 0600.
    write_private(path, "new-token-" + "z" * 20 + "\n")
    assert path.read_text().startswith("new-token-") and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_ssh_gateway_never_relays_an_empty_or_short_token(tmp_path: Path) -> None:
    assert gateway.MIN_TOKEN_CHARS == MIN_TOKEN_CHARS
    empty = tmp_path / "t"
    empty.write_text("")
    code, _, message = gateway.handle("hello", {"placeholder_id": "p", "site": "s"}, {"token_file": str(empty)})
    assert code == gateway.EXIT_REFUSED and str(empty) in message and "0 characters" in message


# --- one Authorization parser on every route ----------------------------------------------------------

BAD_HEADERS: list[list[tuple[str, str]]] = [
    [],
    [("Authorization", "Bearer")],
    [("Authorization", "Bearer ")],
    [("Authorization", f"Bearer  {TOKEN}")],  # two spaces: refused everywhere, not on some routes only
    [("Authorization", f"Basic {TOKEN}")],
    [("Authorization", f"Bearer {TOKEN}x")],
    [("Authorization", f"Bearer {TOKEN} x")],
    [("Authorization", "Bearer nope"), ("Authorization", f"Bearer {TOKEN}")],
]
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/v1/hello", {"placeholder_id": "p", "site": "s"}),
    ("POST", "/v1/claim", {"placeholder_id": "p", "site": "s", "limit": 1}),
    ("POST", "/v1/heartbeat", {"placeholder_id": "p"}),
    ("POST", "/v1/complete", {"placeholder_id": "p", "results": []}),
    ("POST", "/v1/bye", {"placeholder_id": "p"}),
    ("GET", "/v1/status", None),
    ("GET", "/v1/dashboard", None),
]


@pytest.mark.parametrize("headers", BAD_HEADERS, ids=range(len(BAD_HEADERS)))
def test_every_route_refuses_missing_empty_or_malformed_credentials(store: Store, headers: list[Any]) -> None:
    store.submit([JobSpec("echo secret", name="a", env={"API_KEY": "hush"})])
    with TestClient(create_app(store, TOKEN, dashboard_token="d" * 20)) as client:
        for method, path, body in ROUTES:
            r = client.request(method, path, json=body, headers=headers)
            assert r.status_code == 401, (path, headers, r.status_code, r.text)
            assert "hush" not in r.text
    assert store.counts().get("queued") == 1  # nothing was claimed


def test_every_route_accepts_the_one_good_form(store: Store) -> None:
    with TestClient(create_app(store, TOKEN, dashboard_token="d" * 20)) as client:
        for headers in (GOOD, {"Authorization": f"bearer {TOKEN}"}):
            for method, path, body in ROUTES:
                r = client.request(method, path, json=body, headers=headers)
                assert r.status_code == 200, (path, r.status_code, r.text)
        # The read-only dashboard token opens the dashboard and nothing else.
        dash = {"Authorization": "Bearer " + "d" * 20}
        assert client.get("/v1/dashboard", headers=dash).status_code == 200
        assert client.post("/v1/claim", json=ROUTES[1][2], headers=dash).status_code == 401


def test_bearer_parser() -> None:
    def h(v: bytes) -> list[tuple[bytes, bytes]]:
        return [(b"authorization", v)]

    assert bearer_credentials(h(b"Bearer abc")) == b"abc"
    assert bearer_credentials(h(b"BEARER abc")) == b"abc"
    for bad in (b"Bearer", b"Bearer ", b"Bearer  abc", b"Bearerabc", b"Token abc", b"Bearer a\tb", b""):
        assert bearer_credentials(h(bad)) is None, bad
    assert bearer_credentials([]) is None


# --- bodies: bounded, typed, 422 not 500 ---------------------------------------------------------------


def _claimed(store: Store, client: TestClient) -> tuple[int, int]:
    (job,) = store.submit([JobSpec("true", name="sim-1")])
    r = client.post("/v1/claim", json={"placeholder_id": "p", "site": "s", "limit": 1}, headers=GOOD).json()
    assert r["jobs"][0]["job_id"] == job
    return job, r["jobs"][0]["attempt"]


@pytest.mark.parametrize("path", ["/v1/claim", "/v1/complete", "/v1/hello", "/v1/heartbeat", "/v1/bye"])
@pytest.mark.parametrize("raw", [b"{", b"\xff\xfe", b"[1,2]", b"", b"null", b'{"placeholder_id": "p"', b"\x00" * 10])
def test_malformed_json_is_422_with_a_json_error_never_500(store: Store, path: str, raw: bytes) -> None:
    with TestClient(create_app(store, TOKEN), raise_server_exceptions=False) as client:
        r = client.post(path, content=raw, headers={**GOOD, "Content-Type": "application/json"})
        assert r.status_code == 422, (path, raw, r.status_code, r.text)
        assert isinstance(r.json()["detail"], list)


def _result(job: int, run: int, **kw: Any) -> dict[str, Any]:
    now = time.time()
    return {"job_id": job, "attempt": run, "exit_code": 0, "start_at": now - 10, "end_at": now, **kw}


def _raw_complete(client: TestClient, result_json: str) -> Any:
    body = '{"placeholder_id": "p", "results": [' + result_json + "]}"
    return client.post("/v1/complete", content=body.encode(), headers={**GOOD, "Content-Type": "application/json"})


@pytest.mark.parametrize(
    "change",
    [
        {"exit_code": 2**70},
        {"exit_code": -(2**70)},
        {"exit_code": 256},
        {"job_id": 2**70},
        {"attempt": -1},
        {"start_at": 1e308, "end_at": 1e308},  # far in the future
        {"end_at": 1e308},
        {"start_at": 100.0, "end_at": 50.0},  # ends before it starts
        {"start_at": -5.0},
        {"stdout_path": "x" * 10_000},
    ],
)
def test_impossible_completions_are_422_and_change_nothing(store: Store, change: dict[str, Any]) -> None:
    with TestClient(create_app(store, TOKEN), raise_server_exceptions=False) as client:
        job, attempt = _claimed(store, client)
        r = client.post(
            "/v1/complete", json={"placeholder_id": "p", "results": [_result(job, attempt, **change)]}, headers=GOOD
        )
        assert r.status_code == 422, (change, r.status_code, r.text)
        assert "results" in json.dumps(r.json()["detail"])
    assert store.counts().get("running") == 1 and not store.counts().get("done")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
@pytest.mark.parametrize("field", ["start_at", "end_at"])
def test_non_finite_times_are_422(store: Store, token: str, field: str) -> None:
    with TestClient(create_app(store, TOKEN), raise_server_exceptions=False) as client:
        job, attempt = _claimed(store, client)
        fields = _result(job, attempt)
        fields[field] = "@"
        text = json.dumps(fields).replace('"@"', token)
        r = _raw_complete(client, text)
        assert r.status_code == 422, (field, token, r.status_code, r.text)
    assert not store.counts().get("done")
    assert store.estimates().estimate("sim", "s") is None


def test_non_finite_numbers_are_422_in_claims_too(store: Store) -> None:
    with TestClient(create_app(store, TOKEN)) as client:
        body = b'{"placeholder_id": "p", "site": "s", "remaining_s": NaN}'
        r = client.post("/v1/claim", content=body, headers={**GOOD, "Content-Type": "application/json"})
        assert r.status_code == 422
        r = client.post("/v1/claim", json={"placeholder_id": "p", "site": "s", "cpus": 2**70}, headers=GOOD)
        assert r.status_code == 422
        r = client.post("/v1/bye", json={"placeholder_id": "p", "state": "x" * 1000}, headers=GOOD)
        assert r.status_code == 422
        r = client.post("/v1/hello", json={"placeholder_id": "", "site": "s"}, headers=GOOD)
        assert r.status_code == 422


def test_every_list_in_a_body_is_bounded(store: Store) -> None:
    with TestClient(create_app(store, TOKEN)) as client:
        now = time.time()
        one = {"job_id": 1, "attempt": 1, "exit_code": 0, "start_at": now - 1, "end_at": now}
        r = client.post("/v1/complete", json={"placeholder_id": "p", "results": [one] * (MAX_REPORT + 1)}, headers=GOOD)
        assert r.status_code == 422 and "results" in r.text
        release = [{"job_id": 1, "attempt": 1}] * (MAX_REPORT + 1)
        r = client.post("/v1/complete", json={"placeholder_id": "p", "results": [], "release": release}, headers=GOOD)
        assert r.status_code == 422 and "release" in r.text
        for key in ("holding", "fenced"):
            body = {"placeholder_id": "p", "holding": [], key: [[1, 1]] * (MAX_HOLDING + 1)}
            r = client.post("/v1/heartbeat", json=body, headers=GOOD)
            assert r.status_code == 422 and key in r.text
        # At the bound: accepted (nothing is ours, so nothing is accepted, but the call works).
        r = client.post("/v1/complete", json={"placeholder_id": "p", "results": [one] * MAX_REPORT}, headers=GOOD)
        assert r.status_code == 200 and r.json()["accepted"] == [False] * MAX_REPORT


@pytest.mark.parametrize("path", ["/v1/hello", "/v1/heartbeat", "/v1/bye", "/v1/claim", "/v1/complete", "/nowhere"])
def test_every_route_bounds_its_body(store: Store, path: str) -> None:
    pad = " " * (MAX_BODY_BYTES + 1)
    body = ('{"placeholder_id": "p", "site": "s"' + pad + "}").encode()
    with TestClient(create_app(store, TOKEN)) as client:
        r = client.post(path, content=body, headers={**GOOD, "Content-Type": "application/json"})
        assert r.status_code == 413, (path, r.status_code)

        # Without a Content-Length (chunked): counted as it arrives.
        def chunks() -> Any:
            yield b'{"placeholder_id": "p", "site": "s"'
            for _ in range(5):
                yield b" " * (1 << 20)
            yield b"}"

        r = client.post(path, content=chunks(), headers={**GOOD, "Content-Type": "application/json"})
        assert r.status_code == 413, (path, r.status_code)


def test_a_group_commit_batch_is_bounded_by_the_work_it_holds(store: Store) -> None:
    """Large reports are not merged into one long transaction (which held the writer, and /v1/status, for
    seconds): a batch holds at most ``max_weight`` units of work, unless one request alone is heavier."""
    commits = GroupCommit(store, workers=1, max_batch=64, max_weight=10)
    gate = threading.Event()

    async def main() -> None:
        first = asyncio.ensure_future(commits.run(lambda conn, now: gate.wait(30), 1))
        await asyncio.sleep(0.05)  # the worker now holds the first call: the others queue up
        weights = [4, 4, 4, 11, 1, 1, 9, 2]
        rest = [asyncio.ensure_future(commits.run(lambda conn, now: None, w)) for w in weights]
        gate.set()
        await asyncio.wait_for(asyncio.gather(first, *rest), 30)

    asyncio.run(main())
    commits.close()
    assert commits.batches[0] == (1, 1)
    assert commits.batches[1:] == [(2, 8), (1, 4), (1, 11), (2, 2), (1, 9), (1, 2)]
    assert all(w <= 10 or n == 1 for n, w in commits.batches)


@pytest.mark.parametrize("content", ["", "\n", "short\n"])
def test_metasched_server_refuses_to_start_with_an_empty_or_short_token_file(tmp_path: Path, content: str) -> None:
    """``: > t; metasched server --token-file t`` started a server with authentication off: now one line,
    exit status 2, and no server."""
    import subprocess
    import sys

    token_file = tmp_path / "t"
    token_file.write_text(content)
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-m", "metasched", "server", "--token-file", str(token_file), "--port", "1"],
        env={**os.environ, "PYTHONPATH": src, "METASCHED_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: the bearer token") and str(token_file) in out.stderr
    assert "Traceback" not in out.stderr and f"at least {MIN_TOKEN_CHARS}" in out.stderr


def test_what_the_database_cannot_hold_is_422_on_every_backend(db_url: str) -> None:
    """Longer ids than the columns, ids beyond their integers: 422 on SQLite and PostgreSQL (which would
    raise, i.e. 500), and names at the bound work."""
    store = Store.open(db_url, lease_s=30)
    try:
        with TestClient(create_app(store, TOKEN), raise_server_exceptions=False) as client:
            long, ok = "p" * 101, "p" * 100
            assert client.post("/v1/hello", json={"placeholder_id": long, "site": "s"}, headers=GOOD).status_code == 422
            assert (
                client.post("/v1/hello", json={"placeholder_id": ok, "site": "s" * 100}, headers=GOOD).status_code
                == 200
            )
            body = {"placeholder_id": ok, "site": "s", "limit": 1}
            assert client.post("/v1/claim", json={**body, "site": "s" * 101}, headers=GOOD).status_code == 422
            assert client.post("/v1/claim", json=body, headers=GOOD).status_code == 200
            hb = {"placeholder_id": ok, "holding": [[2**40, 1]]}
            assert client.post("/v1/heartbeat", json=hb, headers=GOOD).status_code == 422
            hb = {"placeholder_id": ok, "holding": [[2**31 - 1, 2**31 - 1]]}
            assert client.post("/v1/heartbeat", json=hb, headers=GOOD).status_code == 200
    finally:
        store.close()


def test_a_token_file_others_can_read_is_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="metasched.secure"):
        assert read_token(path) == TOKEN
    assert f"chmod 600 {path}" in caplog.text


def test_the_largest_legitimate_report_fits_the_body_bound(store: Store) -> None:
    """MAX_REPORT completions with paths of MAX_PATH characters each: accepted (the bounds agree); a longer
    path is left out of the placeholder's report rather than getting the whole report refused."""
    from metasched.runtime.metaqueue.protocol import MAX_PATH, Completion, _result

    now = time.time()
    path = "/" + "l" * (MAX_PATH - 1)
    one = Completion(1, 1, -9, now - 1, now, path, path)
    body = json.dumps({"placeholder_id": "p" * 100, "results": [_result(one)] * MAX_REPORT}).encode()
    assert len(body) <= MAX_BODY_BYTES
    with TestClient(create_app(store, TOKEN)) as client:
        r = client.post("/v1/complete", content=body, headers={**GOOD, "Content-Type": "application/json"})
        assert r.status_code == 200, r.text
    longer = _result(Completion(1, 1, 0, now - 1, now, path + "x", None))
    assert longer["stdout_path"] is None


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e308, -1e308, 0.0, -0.0, 2**31, 2**63])
    | st.text(max_size=300),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
_FIELDS = [
    "placeholder_id", "site", "host", "cpus", "mem_mb", "remaining_s", "limit", "ahead", "whole_cpus",
    "whole_mem_mb", "holding", "fenced", "results", "release", "claim", "state", "job_id", "attempt",
    "exit_code", "start_at", "end_at", "stdout_path",
]  # fmt: skip


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(["/v1/hello", "/v1/claim", "/v1/heartbeat", "/v1/complete", "/v1/bye"]),
    body=st.one_of(
        _JSON,
        st.dictionaries(st.sampled_from(_FIELDS), _JSON, max_size=6),
        st.fixed_dictionaries(
            {
                "placeholder_id": st.text(max_size=5),
                "results": st.lists(st.dictionaries(st.sampled_from(_FIELDS), _JSON)),
            }
        ),
    ),
    raw=st.one_of(st.none(), st.binary(max_size=64)),
)
def test_no_body_gets_a_500(fuzz_client: TestClient, path: str, body: Any, raw: bytes | None) -> None:
    """Whatever the body (any JSON, protocol keys with any values, or bytes), the answer is 200 or a 4xx
    with a JSON error: never a 500, never a traceback."""
    content = raw if raw is not None else json.dumps(body).encode()
    r = fuzz_client.post(path, content=content, headers={**GOOD, "Content-Type": "application/json"})
    assert r.status_code in (200, 413, 422), (path, content[:200], r.status_code, r.text[:300])
    assert isinstance(r.json(), dict)


@pytest.fixture(scope="module")
def fuzz_client(tmp_path_factory: pytest.TempPathFactory) -> Any:
    store = Store.open(f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'q.db'}", lease_s=30)
    store.submit([JobSpec("true", name=f"j-{i}") for i in range(20)])
    with TestClient(create_app(store, TOKEN), raise_server_exceptions=False) as client:
        yield client
    store.close()
