"""``GET /metrics`` (``metasched server --metrics``): the metaqueue in Prometheus's exposition format.

Off unless enabled. What is exported (read from the database at each scrape, so any number of
servers, site managers and embedded placeholders sharing the database are all counted):

- ``metasched_jobs{state, owner}``: jobs by state (queued, running, done, failed, dep_failed, cancelled);
  the ``owner`` label only once jobs have owners (the ``owner`` column of issue 36's users), else by state;
- ``metasched_jobs_ready``: queued jobs whose dependencies are all done;
- ``metasched_placeholders{site, state}``: placeholders as recorded (submitted, queued, running, and the
  ended ones: done, expired, cancelled, failed, vanished);
- ``metasched_lease_losses_total``: jobs taken back because their placeholder's lease ended;
- ``metasched_licence_held{licence}`` and ``metasched_licence_copies{licence}`` (the global limit, when set);
- ``metasched_claim_seconds{route}``: the server's time to answer a claim (``claim``) or a report with a
  claim (``complete``), from the parsed request to the answer (database work included). Only claims made
  through this server are timed (placeholders given ``--db`` talk to the database directly).

Why ``prometheus_client`` rather than writing the text format here: it is small (pure Python, no
dependencies) and does the parts that are easy to get subtly wrong: label escaping, histogram buckets
and ``_sum``/``_count``, the ``# HELP``/``# TYPE`` lines, OpenMetrics negotiation. It is in the
``server`` extra and imported only when ``--metrics`` is given.

Protection: the route needs the bearer token like the other routes (the server's token or its read-only
dashboard token, which is what to give Prometheus: ``authorization: {credentials_file: ...}`` in its
scrape config). ``--metrics-open`` serves it without a token, refused unless the server listens on a
loopback address only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request, Response, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from metasched.runtime.metaqueue.models import EVENTS, JOBS, PLACEHOLDERS
from metasched.runtime.metaqueue.secure import bearer_matches, check_token
from metasched.runtime.metaqueue.store import Store

_BEARER = HTTPBearer(auto_error=False)
#: Claim answers are milliseconds; a slow database or a large ready window can take seconds.
CLAIM_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
#: Event ids below the highest lease loss seen minus this are not looked at again (PostgreSQL hands ids out of
#: commit order: a loss committed late with a lower id is still counted if it is within this many ids).
_EVENT_SLACK = 10_000


class QueueCollector(Collector):
    """The database-derived metrics (see the module doc), read at each scrape."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._losses = 0
        self._counted: set[int] = set()
        self._floor = 0

    def describe(self) -> list[Metric]:
        return []  # (no describe: the registry then does not collect at registration)

    def collect(self) -> Iterator[Metric]:
        jobs_has_owner = "owner" in JOBS.c
        labels = ["state", "owner"] if jobs_has_owner else ["state"]
        jobs = GaugeMetricFamily(
            "metasched_jobs", "Jobs by state" + (" and owner" if jobs_has_owner else ""), labels=labels
        )
        placeholders = GaugeMetricFamily(
            "metasched_placeholders", "Placeholders by site and state", labels=["site", "state"]
        )
        with self.store.engine.connect() as conn:
            t = JOBS
            cols = [t.c.state, t.c.owner] if jobs_has_owner else [t.c.state]
            for row in conn.execute(select(*cols, func.count()).group_by(*cols)):
                *keys, n = row
                jobs.add_metric([str(k if k is not None else "") for k in keys], float(n))
            ready = conn.execute(select(func.count()).where(t.c.state == "queued", t.c.pending_deps == 0)).scalar_one()
            p = PLACEHOLDERS
            for site, state, n in conn.execute(select(p.c.site, p.c.state, func.count()).group_by(p.c.site, p.c.state)):
                placeholders.add_metric([site, state], float(n))
            e = EVENTS
            new = conn.execute(select(e.c.id).where(e.c.kind == "lease_lost", e.c.id > self._floor)).scalars().all()
            conn.rollback()
        for event_id in new:
            if event_id not in self._counted:
                self._counted.add(event_id)
                self._losses += 1
        if self._counted:
            self._floor = max(0, max(self._counted) - _EVENT_SLACK)
            self._counted = {i for i in self._counted if i > self._floor}
        yield jobs
        yield GaugeMetricFamily("metasched_jobs_ready", "Queued jobs whose dependencies are all done", value=ready)
        yield placeholders
        yield CounterMetricFamily(
            "metasched_lease_losses", "Jobs taken back because their placeholder's lease ended", value=self._losses
        )
        held = GaugeMetricFamily("metasched_licence_held", "Licence copies held by running jobs", labels=["licence"])
        copies = GaugeMetricFamily(
            "metasched_licence_copies", "Global licence limit (copies at once, all sites)", labels=["licence"]
        )
        for lic in self.store.licence_usage():
            held.add_metric([lic["name"]], float(lic["held"]))
            if lic["copies"] is not None:
                copies.add_metric([lic["name"]], float(lic["copies"]))
        yield held
        yield copies


def mount(app: FastAPI, store: Store, tokens: list[str], *, open_: bool = False) -> Callable[[str, float], None]:
    """Add ``GET /metrics`` to ``app`` (any of ``tokens`` opens it; ``open_``: no token needed).

    Returns ``observe(route, seconds)``, which the server calls with each claim's answer time.
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector(store))
    claim_s = Histogram(
        "metasched_claim_seconds",
        "Server time to answer a claim (route: claim, or complete with a claim)",
        ["route"],
        buckets=CLAIM_BUCKETS,
        registry=registry,
    )
    accepted = [check_token(t, "given to /metrics").encode() for t in tokens]

    # (the parameter documents the scheme in OpenAPI; the check is the one parser of every route)
    async def auth(request: Request, _doc: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> None:
        if not open_ and not bearer_matches(request.scope["headers"], accepted):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong bearer token (metrics)")

    @app.get("/metrics", dependencies=[Depends(auth)], include_in_schema=True, tags=["metrics"])
    def metrics(request: Request) -> Response:
        """Prometheus metrics (text exposition format; OpenMetrics when asked for)."""
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encoder(registry), media_type=content_type)

    def observe(route: str, seconds: float) -> None:
        claim_s.labels(route).observe(seconds)

    return observe


def is_loopback(host: str) -> bool:
    """Whether ``host`` (the server's bind address) is reachable from this machine only."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


__all__ = ["CLAIM_BUCKETS", "QueueCollector", "is_loopback", "mount"]
