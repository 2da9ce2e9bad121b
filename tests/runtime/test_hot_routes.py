"""The server's fast path for claim and complete (HotRoutes): same answers as the routes it shortcuts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from metasched.runtime.metaqueue.service import HotRoutes, create_app
from metasched.runtime.metaqueue.store import JobSpec, Store


def _call(app: Any, path: str, body: bytes, headers: list[tuple[bytes, bytes]], root: str = "") -> tuple[int, bytes]:
    """Drive an ASGI app with one POST whose body arrives in two chunks; return (status, body)."""
    chunks = [
        {"type": "http.request", "body": body[: len(body) // 2], "more_body": True},
        {"type": "http.request", "body": body[len(body) // 2 :], "more_body": False},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return chunks.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": root + path, "root_path": root, "headers": headers}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def _fallback(scope: Any, receive: Any, send: Any) -> Any:
    async def app() -> None:
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b"fallback"})

    return app()


async def _echo(body: bytes) -> tuple[int, bytes]:
    return 200, b"got " + body


def test_hot_routes_check_the_token_read_the_body_and_pass_the_rest_on() -> None:
    app = HotRoutes(_fallback, routes={"/v1/claim": _echo}, token=b"s3cret-0123456789", max_body=100)
    ok = [(b"content-type", b"application/json"), (b"authorization", b"bEaReR s3cret-0123456789")]
    assert _call(app, "/v1/claim", b"0123456789", ok) == (200, b"got 0123456789")
    assert _call(app, "/v1/claim", b"x", ok, root="/mq") == (200, b"got x")  # behind a proxy prefix
    for wrong in ([], [(b"authorization", b"Bearer s3cre")], [(b"authorization", b"Basic s3cret-0123456789")]):
        code, out = _call(app, "/v1/claim", b"x", wrong)
        assert (code, json.loads(out)) == (401, {"detail": "missing or wrong bearer token"})
    assert _call(app, "/v1/claim", b"x" * 101, ok)[0] == 413
    assert _call(app, "/v1/other", b"x", ok) == (299, b"fallback")


def test_server_answers_hot_calls_like_the_documented_routes(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}")
    (jid,) = store.submit([JobSpec("true")])
    app = create_app(store, "tok-0123456789abcdef")
    h = {"Authorization": "bearer tok-0123456789abcdef"}  # the scheme in any case, as HTTPBearer accepts it
    with TestClient(app) as client:
        got = client.post("/v1/claim", json={"placeholder_id": "p", "site": "s"}, headers=h)
        assert got.status_code == 200 and got.headers["content-type"] == "application/json"
        (job,) = got.json()["jobs"]
        assert job["job_id"] == jid
        bad = client.post("/v1/complete", json={"placeholder_id": "p", "results": [{"job_id": jid}]}, headers=h)
        assert bad.status_code == 422 and "attempt" in bad.text
        res = {"job_id": jid, "attempt": job["attempt"], "exit_code": 0, "start_at": 1.0, "end_at": 2.0}
        body = {"placeholder_id": "p", "results": [res], "claim": {"placeholder_id": "p", "site": "s"}}
        assert client.post("/v1/complete", json=body, headers=h).json() == {
            "accepted": [True],
            "claim": {"action": "exit", "jobs": []},
        }
        assert client.get("/v1/status", headers=h).json()["done"] == 1  # other routes: FastAPI's
        assert "/v1/complete" in client.get("/openapi.json").json()["paths"]
    store.close()
