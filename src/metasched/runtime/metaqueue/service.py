"""``metasched server``: the metaqueue over HTTP (FastAPI), for many users and placeholders on remote sites.

Every request needs ``Authorization: Bearer <token>`` (the token :func:`ensure_token` created with
0600 permissions). All state is in the database, so the server can be killed (even -9) and
restarted: a placeholder retries its calls, and jobs whose placeholder vanished come back to the
queue when their lease ends (a background thread expires leases).
OpenAPI: ``/docs`` and ``/openapi.json`` (the token is needed for the protocol calls, not to read the docs).
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue import dashboard
from metasched.runtime.metaqueue.store import Store

log = logging.getLogger("metasched.server")
# Module level: FastAPI resolves the (string) annotations of dependencies in this module's globals.
_BEARER = HTTPBearer(auto_error=False)


class Hello(BaseModel):
    placeholder_id: str
    site: str
    host: str = ""


class ClaimRequest(BaseModel):
    placeholder_id: str
    site: str
    cpus: int = Field(1, ge=0, description="cpus free now (0: only jobs ahead are wanted)")
    mem_mb: int = Field(0, ge=0)
    remaining_s: float | None = None
    limit: int = Field(1, ge=0, le=1000, description="how many jobs at most to start now (batch claim)")
    ahead: int = Field(0, ge=0, le=1000, description="also up to this many jobs to run next (prefetch)")
    whole_cpus: int = Field(1, ge=1, description="the placeholder's size, which each job ahead must fit")
    whole_mem_mb: int = Field(0, ge=0)

    def free(self) -> FreeResources:
        return FreeResources(self.cpus, self.mem_mb, self.remaining_s)

    def whole(self) -> FreeResources:
        return FreeResources(self.whole_cpus, self.whole_mem_mb, self.remaining_s)


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


class ClaimResponse(BaseModel):
    action: str = Field(description="job | wait (work exists, none ready for you) | exit (nothing left)")
    jobs: list[ClaimedJobOut] = []


class PlaceholderRef(BaseModel):
    placeholder_id: str


class HeartbeatResponse(BaseModel):
    held: dict[int, int] = Field(description="job_id -> attempt still held; kill any other job you run")


class Result(BaseModel):
    job_id: int
    attempt: int
    exit_code: int
    start_at: float
    end_at: float
    stdout_path: str | None = None
    stderr_path: str | None = None


class Release(BaseModel):
    job_id: int
    attempt: int


class CompleteRequest(BaseModel):
    placeholder_id: str
    results: list[Result]
    release: list[Release] = Field([], description="prefetched jobs handed back unstarted (attempt not counted)")
    claim: ClaimRequest | None = Field(None, description="claim the next job(s) in the same transaction")


class CompleteResponse(BaseModel):
    accepted: list[bool]
    claim: ClaimResponse | None = None


class Bye(BaseModel):
    placeholder_id: str
    state: str = "done"


def create_app(
    store: Store, token: str, *, expire_every_s: float | None = None, dashboard_token: str | None = None
) -> FastAPI:
    """The FastAPI application over ``store``; leases are expired every ``expire_every_s`` (default lease/4).

    The dashboard page is mounted too (``/dashboard``); ``dashboard_token`` opens its data read-only.
    """
    every = expire_every_s if expire_every_s is not None else max(0.2, store.lease_s / 4)
    stop = threading.Event()

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
        t = threading.Thread(target=expire_loop, name="lease-expiry", daemon=True)
        t.start()
        yield
        stop.set()

    app = FastAPI(
        title="metasched metaqueue",
        version="1",
        description="Placeholder protocol: hello, claim (job | wait | exit), heartbeat, complete, bye.",
        lifespan=lifespan,
    )
    expected = token.encode()

    def auth(creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> None:
        if creds is None or not hmac.compare_digest(creds.credentials.encode(), expected):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong bearer token")

    deps = [Depends(auth)]

    @app.post("/v1/hello", dependencies=deps)
    def hello(req: Hello) -> dict[str, float | None]:
        """A placeholder started; answers its queue wait when the site manager submitted it."""
        return {"wait_s": store.placeholder_started(req.placeholder_id, req.site, req.host)}

    @app.post("/v1/claim", dependencies=deps, response_model=ClaimResponse)
    def claim(req: ClaimRequest) -> ClaimResponse:
        """Up to ``limit`` ready jobs that fit the free resources, with a lease; or wait / exit."""
        res = store.claim(req.site, req.placeholder_id, req.free(), limit=req.limit, ahead=req.ahead, whole=req.whole())
        return ClaimResponse(action=res.action, jobs=[ClaimedJobOut(**j.as_dict()) for j in res.jobs])

    @app.post("/v1/heartbeat", dependencies=deps, response_model=HeartbeatResponse)
    def heartbeat(req: PlaceholderRef) -> HeartbeatResponse:
        """Renew the leases of the placeholder's jobs."""
        return HeartbeatResponse(held=store.heartbeat(req.placeholder_id))

    @app.post("/v1/complete", dependencies=deps, response_model=CompleteResponse)
    def complete(req: CompleteRequest) -> CompleteResponse:
        """Report finished runs (a report from a placeholder that no longer holds the job is refused: False);
        with ``claim``, the next claim is answered too, in the same transaction."""
        c = req.claim
        accepted, claimed = store.report(
            req.placeholder_id,
            [r.model_dump() for r in req.results],
            claim_site=c.site if c else None,
            free=c.free() if c else None,
            limit=c.limit if c else 1,
            ahead=c.ahead if c else 0,
            whole=c.whole() if c else None,
            release=[r.model_dump() for r in req.release],
        )
        return CompleteResponse(
            accepted=accepted,
            claim=ClaimResponse(action=claimed.action, jobs=[ClaimedJobOut(**j.as_dict()) for j in claimed.jobs])
            if claimed
            else None,
        )

    @app.post("/v1/bye", dependencies=deps)
    def bye(req: Bye) -> dict[str, bool]:
        """The placeholder is leaving (``done``, or ``expired`` when its wall time is used up)."""
        store.update_placeholder(req.placeholder_id, state=req.state, ended_at=time.time())
        return {"ok": True}

    @app.get("/v1/status", dependencies=deps)
    def queue_status() -> dict[str, int]:
        """Jobs per state, and ready."""
        return store.counts()

    dashboard.mount(app, store, [token, dashboard_token or ""], time.time)
    return app
