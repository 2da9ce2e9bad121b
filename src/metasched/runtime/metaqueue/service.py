"""``metasched server``: the metaqueue over HTTP (FastAPI), for many users and placeholders on remote sites.

Every request needs ``Authorization: Bearer <token>`` (the token :func:`ensure_token` created with
0600 permissions; one parser for every route, :func:`~metasched.runtime.metaqueue.secure.bearer_matches`).
Every body is bounded (:class:`BodyLimit`, one mechanism for every route) and is described by one
pydantic model below, which bounds its lists and numbers and refuses non-finite or impossible times:
a body that does not fit its model gets 422 with the offending path, never a 500.
All state is in the database, so the server can be killed (even -9) and restarted: a placeholder
retries its calls, and jobs whose placeholder vanished come back to the queue when their lease ends
(a background thread expires leases).
OpenAPI: ``/docs`` and ``/openapi.json`` (the token is needed for the protocol calls, not to read the docs).
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, Self, TypeVar, cast

from fastapi import Depends, FastAPI, HTTPException, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue import dashboard
from metasched.runtime.metaqueue.protocol import MAX_HOLDING, MAX_PATH, MAX_REPORT
from metasched.runtime.metaqueue.records import ClaimResult
from metasched.runtime.metaqueue.secure import bearer_matches, check_token
from metasched.runtime.metaqueue.store import Store

log = logging.getLogger("metasched.server")
M = TypeVar("M", bound=BaseModel)
# Module level: FastAPI resolves the (string) annotations of dependencies in this module's globals.
_BEARER = HTTPBearer(auto_error=False)


#: Largest request body (bytes) on any route: 413 beyond. A full report (MAX_REPORT completions with paths of
#: MAX_PATH) fits; parsing a body this large holds the server's event loop for ~0.1-0.2 s, not seconds.
MAX_BODY_BYTES = 4 << 20
#: A reported instant may be this far ahead of the server's clock (clock skew between hosts), no more.
FUTURE_SLACK_S = 86_400.0
#: Longest placeholder id or site name, and host, in a body (the database's columns); longest path.
MAX_NAME = 100
MAX_HOST = 200
#: Bounds of counts (cpus, MB), job ids and attempts: what the database's (32-bit) integers hold.
MAX_COUNT = 2**31 - 1
MAX_ID = 2**31 - 1
#: Exit codes as placeholders report them: 0-255, or minus the signal number that killed the job.
MIN_EXIT, MAX_EXIT = -128, 255


class Body(BaseModel):
    """Every request body: unknown keys are ignored (older or newer placeholders), numbers are finite."""

    model_config = ConfigDict(allow_inf_nan=False)


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
JobId = Annotated[int, Field(ge=0, le=MAX_ID)]
Attempt = Annotated[int, Field(ge=0, le=MAX_COUNT)]
#: Seconds since the epoch: finite, not negative, at most a day ahead of the server (checked per body).
Instant = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
Run = tuple[JobId, Attempt]


def _not_future(at: float, what: str) -> None:
    if at > time.time() + FUTURE_SLACK_S:
        raise ValueError(f"{what} is more than {FUTURE_SLACK_S:.0f} s in the future ({at!r})")


class Hello(Body):
    placeholder_id: Name
    site: Name
    host: str = Field("", max_length=MAX_HOST)


class ClaimRequest(Body):
    placeholder_id: Name
    site: Name
    cpus: Count = Field(1, description="cpus free now (0: only jobs ahead are wanted)")
    mem_mb: Count = 0
    remaining_s: float | None = Field(None, ge=-1e10, le=1e10, description="wall time left (s), None: unbounded")
    limit: int = Field(1, ge=0, le=1000, description="how many jobs at most to start now (batch claim)")
    ahead: int = Field(0, ge=0, le=1000, description="also up to this many jobs to run next (prefetch)")
    whole_cpus: int = Field(1, ge=1, le=MAX_COUNT, description="the placeholder's size, which each job ahead must fit")
    whole_mem_mb: Count = 0
    nodes: int = Field(1, ge=0, le=MAX_COUNT, description="nodes free for one job now (several: one job at a time)")
    whole_nodes: int = Field(1, ge=1, le=MAX_COUNT, description="the placeholder's nodes")
    node_cpus: int | None = Field(
        None, ge=1, le=MAX_COUNT, description="cpus per node of a placeholder of several nodes"
    )

    def free(self) -> FreeResources:
        return FreeResources(self.cpus, self.mem_mb, self.remaining_s, nodes=self.nodes, node_cpus=self.node_cpus)

    def whole(self) -> FreeResources:
        return FreeResources(
            self.whole_cpus, self.whole_mem_mb, self.remaining_s, nodes=self.whole_nodes, node_cpus=self.node_cpus
        )


class ClaimedJobOut(BaseModel):
    job_id: int
    attempt: int
    name: str | None
    command: str
    cwd: str
    env: dict[str, str]
    cpus: int
    mem_mb: int
    time_s: float
    lease_until: float
    tasks: int = 1
    nodes: int = 1


class ClaimResponse(BaseModel):
    action: str = Field(description="job | wait (work exists, none ready for you) | exit (nothing left)")
    jobs: list[ClaimedJobOut] = []


class HeartbeatRequest(Body):
    placeholder_id: Name
    holding: list[Run] | None = Field(
        default=None,
        max_length=MAX_HOLDING,
        description="(job_id, attempt) of every job the placeholder runs, has prefetched or has finished and not "
        "yet reported: only these are renewed, any other job leased to it is taken back. Absent: renew all.",
    )
    fenced: list[Run] = Field(
        default_factory=list,
        max_length=MAX_HOLDING,
        description="(job_id, attempt) of jobs it started and killed itself after losing contact for nearly a "
        "lease: taken back with the attempt counted (the others not held go back uncounted).",
    )


class HeartbeatResponse(BaseModel):
    held: dict[int, int] = Field(description="job_id -> attempt still held; kill any other job you run")


class Result(Body):
    job_id: JobId
    attempt: Attempt
    exit_code: int = Field(ge=MIN_EXIT, le=MAX_EXIT, description="0-255, or minus the signal that killed the job")
    start_at: Instant
    end_at: Instant
    stdout_path: str | None = Field(None, max_length=MAX_PATH)
    stderr_path: str | None = Field(None, max_length=MAX_PATH)

    @model_validator(mode="after")
    def _possible(self) -> Self:
        if self.end_at < self.start_at:
            raise ValueError(f"end_at ({self.end_at!r}) is before start_at ({self.start_at!r})")
        _not_future(self.end_at, "end_at")
        return self


class Release(Body):
    job_id: JobId
    attempt: Attempt


class CompleteRequest(Body):
    placeholder_id: Name
    results: list[Result] = Field(max_length=MAX_REPORT)
    release: list[Release] = Field(
        [], max_length=MAX_REPORT, description="prefetched jobs handed back unstarted (attempt not counted)"
    )
    claim: ClaimRequest | None = Field(None, description="claim the next job(s) in the same transaction")


class CompleteResponse(BaseModel):
    accepted: list[bool]
    claim: ClaimResponse | None = None


class Bye(Body):
    placeholder_id: Name
    state: Literal["done", "expired", "failed"] = "done"


#: Longest a ``/v1/wait`` long poll is held (s); the placeholder asks for less (its pause, under its time-out).
MAX_WAIT_S = 30.0


class WaitRequest(Body):
    since: int | None = Field(
        None, ge=0, le=2**62, description="the version the last wait answered; None: answer the current one at once"
    )
    timeout_s: float = Field(1.0, ge=0.0, le=MAX_WAIT_S, description="longest wait (s)")


class WaitResponse(BaseModel):
    version: int = Field(description="the server's change counter: pass it as since in the next wait")
    changed: bool = Field(description="whether the metaqueue changed since ``since`` (False: the time ran out)")


class ChangeFeed:
    """Wakes the placeholders long-polling ``/v1/wait`` when the metaqueue changes (issue 34).

    One thread watches the database as :meth:`Store.wait_for_change` does (SQLite's ``data_version``, every
    commit of any connection, this server's included; PostgreSQL's ``NOTIFY``, sent by each transaction that may
    make work ready) and, while some placeholder waits, bumps :attr:`version` on each change and wakes the
    waiters on the event loop. Invariant: a wait with ``since`` equal to the current version returns only after
    the version moved past it or its time ran out; a change between a placeholder's last claim and its next wait
    moved the version past what its previous wait answered, so that wait returns at once (nothing is missed).
    The watcher runs only while someone waits: an idle server polls nothing.
    """

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop) -> None:
        self.version = 1
        self._loop = loop
        self._event = asyncio.Event()
        self._waiters = 0
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self._watch = store.watcher()
        self._thread = threading.Thread(target=self._watch_loop, name="change-feed", daemon=True)
        self._thread.start()

    def _watch_loop(self) -> None:
        try:  # the first wait only starts listening (PostgreSQL) / takes the version (SQLite): not a change
            self._watch.wait_for_change(0)
        except Exception:
            log.exception("change feed: watching the database failed")
        while not self._stop.is_set():
            if not self._wanted.wait(0.5):
                continue
            try:
                changed = self._watch.wait_for_change(0.25)
            except Exception:  # the database hiccuped: waiters time out and poll; try again shortly
                log.exception("change feed: watching the database failed")
                self._stop.wait(0.5)
                continue
            if changed and not self._stop.is_set():
                self._loop.call_soon_threadsafe(self._bump)

    def _bump(self) -> None:
        self.version += 1
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait(self, since: int | None, timeout_s: float) -> tuple[int, bool]:
        if since is None or since != self.version:
            return self.version, since is not None
        event = self._event
        self._waiters += 1
        self._wanted.set()
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            pass
        finally:
            self._waiters -= 1
            if self._waiters == 0:
                self._wanted.clear()
        return self.version, self.version != since

    def close(self) -> None:
        self._stop.set()
        self._wanted.set()
        self._thread.join(timeout=5)
        self._watch.close_watch()


class GroupCommit:
    """The claim path's database worker(s): requests queue here and are run many per transaction.

    Why: with 100 placeholders asking at once, one transaction (and, on SQLite, one turn of the
    single writer lock and one commit) per request was the bottleneck. A worker takes every request
    waiting (up to ``max_batch``) and runs them in order in one transaction
    (:meth:`Store.run_batch`); each request's answer is sent only after that commit. One worker on
    SQLite (one writer anyway); ``workers`` on PostgreSQL, whose row locks (``SKIP LOCKED``) let
    batches run side by side.
    """

    def __init__(
        self, store: Store, *, workers: int | None = None, max_batch: int = 64, max_weight: int = 2 * MAX_REPORT
    ) -> None:
        self.store = store
        self.max_batch = max_batch
        #: A batch holds requests of at most this much work in all (a request's weight: 1 + the runs it
        #: reports), so that one transaction never holds the writer long: large reports go one per batch.
        self.max_weight = max_weight
        self.queue: queue.SimpleQueue[tuple[Callable[[Any, float], Any], asyncio.Future[Any], int] | None] = (
            queue.SimpleQueue()
        )
        #: Sizes (requests, weight) of the last batches run, newest last (for tests and the curious).
        self.batches: list[tuple[int, int]] = []
        n = workers if workers is not None else (4 if store.is_postgres else 1)
        self.threads = [threading.Thread(target=self._work, name=f"group-commit-{i}", daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    async def run(self, call: Callable[[Any, float], Any], weight: int = 1) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.queue.put((call, fut, weight))
        return await fut

    def close(self) -> None:
        for _ in self.threads:
            self.queue.put(None)

    def _work(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            items = [item]
            weight = item[2]
            carry = None
            while len(items) < self.max_batch and weight < self.max_weight:
                try:
                    more = self.queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self.queue.put(None)  # for the next round: stop after this batch
                    break
                if weight + more[2] > self.max_weight:
                    carry = more  # first of the next batch
                    break
                items.append(more)
                weight += more[2]
            self._run(items, weight)
            if carry is not None:
                self._run([carry], carry[2])

    def _run(self, items: list[tuple[Callable[[Any, float], Any], asyncio.Future[Any], int]], weight: int) -> None:
        self.batches = [*self.batches[-99:], (len(items), weight)]
        try:
            results: list[Any] = self.store.run_batch([call for call, _, _ in items])
        except Exception as exc:
            results = [exc] * len(items)
        for (_, fut, _), result in zip(items, results, strict=True):
            fut.get_loop().call_soon_threadsafe(_settle, fut, result)


def _settle(fut: asyncio.Future[Any], result: Any) -> None:
    if fut.cancelled():
        return
    if isinstance(result, Exception):
        fut.set_exception(result)
    else:
        fut.set_result(result)


def _invalid(exc: ValidationError) -> tuple[int, bytes]:
    """422 and pydantic's errors (path, message, type), as FastAPI answers a body it cannot validate. The
    input is left out: it may be bytes (malformed JSON), which JSON cannot carry, and it is the caller's."""
    detail = exc.errors(include_url=False, include_context=False, include_input=False)
    return 422, json.dumps({"detail": detail}, default=str).encode()


_UNAUTHORISED = json.dumps({"detail": "missing or wrong bearer token"}).encode()
_TOO_LARGE = json.dumps({"detail": f"request body larger than {MAX_BODY_BYTES} bytes"}).encode()


class BodyLimit:
    """ASGI middleware bounding the request body of EVERY route (the outermost layer: one mechanism,
    not a check per route): 413 when ``Content-Length`` or the bytes received exceed ``max_body``.

    The body is read here (at most ``max_body`` bytes are ever held) and handed on whole."""

    def __init__(self, app: Any, *, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _answer(send, 400, json.dumps({"detail": "bad Content-Length"}).encode())
                    return
                if declared > self.max_body:
                    await _answer(send, 413, _TOO_LARGE)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _answer(send, 413, _TOO_LARGE)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # (after the body: wait for the disconnect, as the server would)

        await self.app(scope, replay, send)


class HotRoutes:
    """ASGI middleware answering the protocol's hot calls (``POST`` claim and complete) itself.

    Why: one claim or report costs the server ~1 ms of Python through Starlette's middleware
    stack, routing, dependency solving and request/response objects; a placeholder of no-op jobs makes
    hundreds a second. This answers them with what matters: the bearer check (the one of every route,
    :func:`~metasched.runtime.metaqueue.secure.bearer_matches`; 401 otherwise), the body read (bounded by
    :class:`BodyLimit` outside, and here too), then ``routes[path](body) -> (status, JSON bytes)``.
    Everything else, and errors raised (500 from Starlette's outermost middleware), goes to the wrapped app.
    """

    def __init__(
        self,
        app: Any,
        *,
        routes: dict[str, Callable[[bytes], Awaitable[tuple[int, bytes]]]],
        token: bytes,
        max_body: int = MAX_BODY_BYTES,
    ) -> None:
        self.app = app
        self.routes = routes
        self.tokens = [check_token(token.decode(), "given to the server").encode()]
        self.max_body = max_body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        handler = None
        if scope["type"] == "http" and scope["method"] == "POST":
            path, root = scope["path"], scope.get("root_path", "")
            handler = self.routes.get(path[len(root) :] if root and path.startswith(root) else path)
        if handler is None:
            await self.app(scope, receive, send)
            return
        if not bearer_matches(scope["headers"], self.tokens):
            await _answer(send, 401, _UNAUTHORISED)
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await _answer(send, 413, _TOO_LARGE)
                return
            if not message.get("more_body", False):
                break
        code, out = await handler(body)
        await _answer(send, code, out)


async def _answer(send: Any, code: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": code,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _claim_out(res: ClaimResult) -> dict[str, Any]:
    return {"action": res.action, "jobs": [j.as_dict() for j in res.jobs]}


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with its ``$defs`` inlined (for ``openapi_extra`` of the lean routes)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return cast(dict[str, Any], inline(schema))


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": _schema(model)}}}}


def _no_metrics(route: str, seconds: float) -> None:
    """Claim timings go nowhere without ``--metrics``."""


def create_app(
    store: Store,
    token: str,
    *,
    expire_every_s: float | None = None,
    dashboard_token: str | None = None,
    metrics: bool = False,
    metrics_open: bool = False,
    agent_token: str | None = None,
) -> FastAPI:
    """The FastAPI application over ``store``; leases are expired every ``expire_every_s`` (default lease/4).

    ``token`` is the admin's (the user API, :mod:`.user_api`); the placeholder protocol takes ``agent_token``
    (the site/agent token), or ``token`` when none is given (the old single-token setup).

    The dashboard page is mounted too (``/dashboard``); ``dashboard_token`` opens its data read-only.
    ``metrics``: ``GET /metrics`` for Prometheus (:mod:`.metrics`; ``metrics_open``: without a token).
    The two hot calls (claim, complete) are lean routes: the body is validated by pydantic from the
    raw bytes, the answer is written as JSON directly, and the database work goes through a
    :class:`GroupCommit`.
    """
    check_token(token, "given to the server")
    if agent_token is not None:
        check_token(agent_token, "given to the server for the placeholders (--agent-token-file)")
    if dashboard_token is not None:
        check_token(dashboard_token, "given to the server for the dashboard")
    every = expire_every_s if expire_every_s is not None else max(0.2, store.lease_s / 4)
    stop = threading.Event()
    commits: GroupCommit | None = None
    feed: ChangeFeed | None = None

    def expire_loop() -> None:
        while not stop.wait(every):
            try:
                lost = store.expire_leases()
                if lost:
                    log.info("leases expired: %s", lost)
            except Exception:  # the loop must survive a database hiccup
                log.exception("lease expiry failed")

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        nonlocal commits
        # Leases that ended while no server ran say nothing about the placeholders: give each one lease
        # to get back in touch (Store.grant_grace) before any is expired.
        extended = store.grant_grace()
        if extended:
            log.info("server start: %d running jobs' leases extended by one lease (grace)", extended)
        t = threading.Thread(target=expire_loop, name="lease-expiry", daemon=True)
        t.start()
        commits = GroupCommit(store)
        nonlocal feed
        feed = ChangeFeed(store, asyncio.get_running_loop())
        yield
        stop.set()
        commits.close()
        feed.close()

    app = FastAPI(
        title="metasched metaqueue",
        version="1",
        description="Users: submit, list, show, cancel, retry, wait, logs under /v1/jobs (a user's or the admin's "
        "token). Placeholders: hello, claim (job | wait | exit), wait (long poll while idle), heartbeat, complete, bye "
        "(the site/agent token).",
        lifespan=lifespan,
    )
    expected = (agent_token or token).encode()

    # async: a plain ``def`` dependency would cost every request a hop through the thread pool. ``_BEARER``
    # only documents the scheme (OpenAPI); the header is parsed by the one parser of every route.
    async def auth(request: Request, _doc: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> None:
        if not bearer_matches(request.scope["headers"], [expected]):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong bearer token")

    deps = [Depends(auth)]
    observe: Callable[[str, float], None] = _no_metrics
    if metrics:
        from metasched.runtime.metaqueue import metrics as prometheus

        readers = [token, *([dashboard_token] if dashboard_token else [])]
        observe = prometheus.mount(app, store, readers, open_=metrics_open)

    def typed(model: type[M], call: Callable[[M], Any]) -> Callable[[Request], Awaitable[Response]]:
        """An endpoint taking ``model``'s body: the one way every body is read (as the lean routes do:
        422 with pydantic's errors for anything that is not that model's JSON, malformed bytes included),
        then ``call`` in the thread pool and its answer as JSON."""

        async def endpoint(request: Request) -> Response:
            try:
                req = model.model_validate_json(await request.body())
            except ValidationError as exc:
                code, out = _invalid(exc)
                return Response(out, status_code=code, media_type="application/json")
            out = await run_in_threadpool(call, req)
            if isinstance(out, BaseModel):
                out = out.model_dump()
            return Response(json.dumps(out).encode(), media_type="application/json")

        endpoint.__doc__ = call.__doc__
        return endpoint

    def hello(req: Hello) -> dict[str, float | None]:
        """A placeholder started; answers its queue wait when the site manager submitted it."""
        return {"wait_s": store.placeholder_started(req.placeholder_id, req.site, req.host)}

    app.post("/v1/hello", dependencies=deps, openapi_extra=_body(Hello), name="hello")(typed(Hello, hello))

    async def run(call: Callable[[Any, float], Any], weight: int = 1) -> Any:
        if commits is None:  # app used without its lifespan (no server loop): run it here
            return await run_in_threadpool(lambda: store.run_batch([call])[0])
        result = await commits.run(call, weight)
        return result

    async def claim_call(body: bytes) -> tuple[int, bytes]:
        try:
            req = ClaimRequest.model_validate_json(body)
        except ValidationError as exc:
            return _invalid(exc)
        t0 = time.perf_counter()
        res = await run(
            lambda conn, now: store.claim_in(
                conn, now, req.site, req.placeholder_id, req.free(), req.limit, ahead=req.ahead, whole=req.whole()
            )
        )
        observe("claim", time.perf_counter() - t0)
        return 200, json.dumps(_claim_out(res)).encode()

    @app.post(
        "/v1/claim",
        dependencies=deps,
        response_model=ClaimResponse,
        openapi_extra=_body(ClaimRequest),
    )
    async def claim(request: Request) -> Response:
        """Up to ``limit`` ready jobs that fit the free resources, with a lease; or wait / exit.
        With ``ahead``: also up to that many jobs to run next (prefetch), each fitting ``whole_cpus``."""
        code, out = await claim_call(await request.body())
        return Response(out, status_code=code, media_type="application/json")

    def heartbeat(req: HeartbeatRequest) -> HeartbeatResponse:
        """Renew the leases of the placeholder's jobs (with ``holding``: exactly those it lists)."""
        return HeartbeatResponse(held=store.heartbeat(req.placeholder_id, holding=req.holding, fenced=req.fenced))

    app.post(
        "/v1/heartbeat",
        dependencies=deps,
        response_model=HeartbeatResponse,
        openapi_extra=_body(HeartbeatRequest),
        name="heartbeat",
    )(typed(HeartbeatRequest, heartbeat))

    async def complete_call(body: bytes) -> tuple[int, bytes]:
        try:
            req = CompleteRequest.model_validate_json(body)
        except ValidationError as exc:
            return _invalid(exc)
        c = req.claim
        results = [r.model_dump() for r in req.results]
        release = [r.model_dump() for r in req.release]
        t0 = time.perf_counter()
        accepted, claimed = await run(
            lambda conn, now: store.report_in(
                conn,
                now,
                req.placeholder_id,
                results,
                c.site if c else None,
                c.free() if c else None,
                c.limit if c else 1,
                ahead=c.ahead if c else 0,
                whole=c.whole() if c else None,
                release=release,
            ),
            1 + len(results) + len(release),
        )
        if c is not None:
            observe("complete", time.perf_counter() - t0)
        out = {"accepted": accepted, "claim": _claim_out(claimed) if claimed else None}
        return 200, json.dumps(out).encode()

    @app.post(
        "/v1/complete",
        dependencies=deps,
        response_model=CompleteResponse,
        openapi_extra=_body(CompleteRequest),
    )
    async def complete(request: Request) -> Response:
        """Report finished runs (a report from a placeholder that no longer holds the job is refused: False),
        hand back prefetched jobs (``release``); with ``claim``, the next claim is answered too, in the same
        transaction."""
        code, out = await complete_call(await request.body())
        return Response(out, status_code=code, media_type="application/json")

    # The routes above document the two hot calls (OpenAPI) and answer them if the middleware is bypassed;
    # this answers them first, without Starlette's routing and middleware stack.
    app.add_middleware(HotRoutes, routes={"/v1/claim": claim_call, "/v1/complete": complete_call}, token=expected)
    app.add_middleware(BodyLimit)  # added last: outermost, so it bounds every route, the hot ones too

    @app.post("/v1/wait", dependencies=deps, response_model=WaitResponse, openapi_extra=_body(WaitRequest))
    async def wait(request: Request) -> Response:
        """Long poll of an idle placeholder: answers as soon as the metaqueue changes after ``since`` (a job
        submitted, one ended...), else after ``timeout_s`` (at most 30 s). Then claim again."""
        try:
            req = WaitRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            code, out = _invalid(exc)
            return Response(out, status_code=code, media_type="application/json")
        if feed is None:  # app used without its lifespan: nothing watches, answer "maybe changed"
            version, changed = (req.since or 0) + 1, True
        else:
            version, changed = await feed.wait(req.since, req.timeout_s)
        return Response(json.dumps({"version": version, "changed": changed}).encode(), media_type="application/json")

    def bye(req: Bye) -> dict[str, bool]:
        """The placeholder is leaving (``done``, ``expired`` when its wall time is used up, or ``failed``)."""
        store.update_placeholder(req.placeholder_id, state=req.state, ended_at=time.time())
        return {"ok": True}

    app.post("/v1/bye", dependencies=deps, openapi_extra=_body(Bye), name="bye")(typed(Bye, bye))

    @app.get("/v1/status", dependencies=deps)
    def queue_status() -> dict[str, int]:
        """Jobs per state, and ready."""
        return store.counts()

    dashboard.mount(app, store, [token, *([dashboard_token] if dashboard_token else [])], time.time)
    app.state.group_commit = lambda: commits
    from metasched.runtime.metaqueue.user_api import mount_user_api

    mount_user_api(app, store, token, agent_token)
    return app
