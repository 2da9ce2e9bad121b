"""The metaqueue dashboard: one web page served by ``metasched server`` at ``/dashboard`` (and ``/``).

The page (``dashboard_static/index.html`` + ``dashboard.js``, plain SVG drawn by our own code, no
third-party script, nothing fetched from the internet) polls one JSON endpoint,
``GET /v1/dashboard``, every two seconds and redraws: queues per site, placeholders (queued,
running, throttle decisions), jobs with their state and dependencies, a Gantt chart of jobs over
sites over time, throughput and wait plots; the claim policy the server runs (``--policy``) and
each licence's use (copies held, global and per-site limits).

Authentication: the HTML and the script are public (they hold no data); the JSON needs a bearer
token, either the server's full token or the *read-only* dashboard token
(``$METASCHED_HOME/dashboard-token``, created 0600 next to the main one), which opens
``/v1/dashboard`` and nothing else. The page asks for the token once and keeps it in the browser's
``sessionStorage``; ``/dashboard#token=...`` pre-fills it (the fragment never reaches the server logs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request, status
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import func, select

from metasched.runtime.metaqueue.models import DEPS, JOBS, PLACEHOLDERS
from metasched.runtime.metaqueue.secure import bearer_matches, check_token
from metasched.runtime.metaqueue.states import JobState
from metasched.runtime.metaqueue.store import Store

STATIC = Path(__file__).with_name("dashboard_static")
_FILES = {"index.html": "text/html", "dashboard.js": "text/javascript", "dashboard.css": "text/css"}
_BEARER = HTTPBearer(auto_error=False)
#: The page shows at most this many jobs (the newest, plus every unfinished one up to the cap).
MAX_JOBS = 3000


def snapshot(store: Store, *, max_jobs: int = MAX_JOBS, now: float) -> dict[str, Any]:
    """Everything the page draws, in one read: sites, placeholders, jobs (with dependencies), counts.

    Jobs: the ``max_jobs`` newest (by id). Per site: running jobs, active placeholders by state,
    the throttle target and the decisions taken. ``ready`` is global: a ready job is not bound to a
    site until a placeholder claims it.
    """
    with store.engine.connect() as conn:
        counts = {st: n for st, n in conn.execute(select(JOBS.c.state, func.count()).group_by(JOBS.c.state))}
        ready = conn.execute(
            select(func.count()).where(JOBS.c.state == JobState.QUEUED, JOBS.c.pending_deps == 0)
        ).scalar_one()
        cols = [
            JOBS.c.id,
            JOBS.c.name,
            JOBS.c.state,
            JOBS.c.site,
            JOBS.c.placeholder_id,
            JOBS.c.cpus,
            JOBS.c.attempts,
            JOBS.c.submit_at,
            JOBS.c.start_at,
            JOBS.c.end_at,
            JOBS.c.pending_deps,
            JOBS.c.reason,
        ]
        rows = conn.execute(select(*cols).order_by(JOBS.c.id.desc()).limit(max_jobs)).all()
        ids = [r.id for r in rows]
        deps: dict[int, list[int]] = {}
        if ids:
            lo = min(ids)
            for jid, after in conn.execute(select(DEPS.c.job_id, DEPS.c.after_id).where(DEPS.c.job_id >= lo)):
                deps.setdefault(jid, []).append(after)
        phs = conn.execute(select(PLACEHOLDERS).order_by(PLACEHOLDERS.c.submitted_at)).all()
    sites: dict[str, dict[str, Any]] = {
        s["name"]: {
            "name": s["name"],
            "adapter": s["adapter"],
            "target": s["target"],
            "licences": s["licences"] or {},
            "placeholders": {},
            "decisions": {},
            "running_jobs": 0,
            "done_jobs": 0,
            "reach": (s["config"] or {}).get("reach"),  # up/down, since, error: set by the site manager
        }
        for s in store.sites()
    }

    def site(name: str) -> dict[str, Any]:
        return sites.setdefault(
            name,
            {
                "name": name,
                "adapter": "?",
                "target": None,
                "licences": {},
                "placeholders": {},
                "decisions": {},
                "running_jobs": 0,
                "done_jobs": 0,
            },
        )

    for p in phs:
        s = site(p.site)
        s["placeholders"][p.state] = s["placeholders"].get(p.state, 0) + 1
        if p.decision:
            s["decisions"][p.decision] = s["decisions"].get(p.decision, 0) + 1
    jobs = []
    for r in reversed(rows):
        if r.site and r.state == JobState.RUNNING:
            site(r.site)["running_jobs"] += 1
        elif r.site and r.state == JobState.DONE:
            site(r.site)["done_jobs"] += 1
        jobs.append(
            {
                "id": r.id,
                "name": r.name,
                "state": r.state,
                "site": r.site,
                "placeholder": r.placeholder_id,
                "cpus": r.cpus,
                "attempts": r.attempts,
                "submit_at": r.submit_at,
                "start_at": r.start_at,
                "end_at": r.end_at,
                "pending_deps": r.pending_deps,
                "after": sorted(deps.get(r.id, [])),
                "reason": r.reason,
            }
        )
    placeholders = [
        {
            "id": p.id,
            "site": p.site,
            "batch_id": p.batch_id,
            "state": p.state,
            "submitted_at": p.submitted_at,
            "started_at": p.started_at,
            "ended_at": p.ended_at,
            "wait_s": p.wait_s,
            "decision": p.decision,
            "jobs_run": p.jobs_run,
        }
        for p in phs[-500:]
    ]
    return {
        "now": now,
        "policy": store.policy.key,
        "licences": store.licence_usage(),
        "counts": {**counts, "ready": ready},
        "sites": sorted(sites.values(), key=lambda s: s["name"]),
        "placeholders": placeholders,
        "jobs": jobs,
        "truncated": len(rows) == max_jobs,
    }


def mount(app: FastAPI, store: Store, tokens: list[str], clock: Callable[[], float]) -> None:
    """Add the page, its static files and ``GET /v1/dashboard`` (any of ``tokens`` opens it) to ``app``."""
    accepted = [check_token(t, "given to the dashboard").encode() for t in tokens]

    async def auth(request: Request, _doc: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> None:
        if not bearer_matches(request.scope["headers"], accepted):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong bearer token (dashboard)")

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/dashboard")

    @app.get("/dashboard", include_in_schema=False)
    def page() -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.get("/dashboard/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in _FILES:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no dashboard file {name!r}")
        return FileResponse(STATIC / name, media_type=_FILES[name])

    @app.get("/v1/dashboard", dependencies=[Depends(auth)])
    def data() -> dict[str, Any]:
        """Sites, placeholders, jobs (with dependencies) and counts, for the dashboard page."""
        return snapshot(store, now=clock())
