"""The placeholder protocol: what a placeholder says to the metaqueue, over HTTP or straight to the store.

Both transports offer the same five calls (``hello``, ``claim``, ``heartbeat``, ``complete``,
``bye``), so one placeholder agent runs against the service (many users, remote sites) or against
the database (small setups, no server).
"""

from __future__ import annotations

import functools
import http.client
import json
import logging
import os
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.records import ClaimedJob, ClaimResult
from metasched.runtime.metaqueue.secure import TokenError, check_token, private_dir, write_private

if TYPE_CHECKING:
    from metasched.runtime.metaqueue.store import Store

P = ParamSpec("P")
R = TypeVar("R")

#: Most completions (and, apart, most hand-backs) in one report: the server refuses more (422), so a
#: placeholder sends a longer backlog in several reports.
MAX_REPORT = 1000
#: Most ``(job_id, attempt)`` pairs in a heartbeat's ``holding`` (and ``fenced``).
MAX_HOLDING = 100_000
#: Longest log path a report carries (a longer one is left out of the report, not refused).
MAX_PATH = 1024


class ServerError(ConnectionError):
    """The metaqueue answered 5xx: it is there but failing; retried like an unreachable one, within bounds
    (the agent gives up after ``give_up_s`` of failures)."""


class Refused(PermissionError):
    """The metaqueue refused the call (4xx: wrong token, a body it does not accept). Retrying cannot help."""


@dataclass(slots=True)
class Completion:
    """The end of one run, as a placeholder reports it."""

    job_id: int
    attempt: int
    exit_code: int
    start_at: float
    end_at: float
    stdout_path: str | None = None
    stderr_path: str | None = None


class Transport(ABC):
    """How a placeholder talks to the metaqueue. Every call may raise ``ConnectionError`` (retry later) or
    ``PermissionError`` (refused: do not retry)."""

    @abstractmethod
    def hello(self, placeholder_id: str, site: str, host: str) -> float | None: ...

    @abstractmethod
    def claim(
        self,
        placeholder_id: str,
        site: str,
        free: FreeResources,
        limit: int,
        *,
        ahead: int = 0,
        whole: FreeResources | None = None,
    ) -> ClaimResult:
        """Up to ``limit`` jobs fitting ``free`` now, and up to ``ahead`` more to run next, each fitting
        ``whole`` (the placeholder's size): see :meth:`metasched.runtime.metaqueue.store.Store.claim`."""

    @abstractmethod
    def heartbeat(
        self,
        placeholder_id: str,
        holding: Sequence[tuple[int, int]] | None = None,
        fenced: Sequence[tuple[int, int]] = (),
    ) -> dict[int, int]:
        """Renew leases; ``holding`` / ``fenced``: see :meth:`metasched.runtime.metaqueue.store.Store.heartbeat`."""

    @abstractmethod
    def complete(self, placeholder_id: str, results: list[Completion]) -> list[bool]: ...

    @abstractmethod
    def bye(self, placeholder_id: str, state: str) -> None: ...

    def report(
        self,
        placeholder_id: str,
        results: list[Completion],
        site: str,
        free: FreeResources | None,
        limit: int,
        *,
        ahead: int = 0,
        whole: FreeResources | None = None,
        release: Sequence[tuple[int, int]] = (),
    ) -> tuple[list[bool], ClaimResult | None]:
        """Completions, jobs handed back unstarted (``release``: ``(job_id, attempt)``) and, when ``free`` is
        given, the next claim: one round trip (and one transaction) where the transport can."""
        if release:
            raise NotImplementedError(f"{type(self).__name__} cannot hand jobs back")
        accepted = self.complete(placeholder_id, results)
        claimed = None
        if free is not None:
            claimed = self.claim(placeholder_id, site, free, limit, ahead=ahead, whole=whole)
        return accepted, claimed

    def wait_for_work(self, timeout_s: float) -> None:
        """Block up to ``timeout_s`` while nothing has changed in the metaqueue (may return early)."""
        time.sleep(timeout_s)

    def bound(self, timeout_s: float) -> None:  # noqa: B027 - optional hook
        """Let no call wait for an answer longer than ``timeout_s`` (then it raises ``ConnectionError``); only
        ever lowers the transport's own time-out.

        The agent bounds its calls by a fraction of the lease: a call that hangs must not hold the agent
        past the moment it has to heartbeat again."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


def _db_call(method: Callable[P, R]) -> Callable[P, R]:
    """A lost or unusable database connection (SQLAlchemy ``OperationalError`` / ``InterfaceError``: the
    server restarted, a network cut, a lock held too long) raises ``ConnectionError``, as an unreachable
    server does over HTTP: the agent retries, on a new connection (SQLAlchemy invalidated the old one)."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            from sqlalchemy.exc import InterfaceError, OperationalError  # (loaded: the store runs on it)

            if isinstance(exc, OperationalError | InterfaceError):
                raise ConnectionError(f"metaqueue database unreachable: {exc}") from exc
            raise

    return call


class StoreTransport(Transport):
    """Straight to the database (SQLite file or PostgreSQL URL); see :func:`_db_call` for its errors."""

    def __init__(self, store: Store):
        self.store = store

    @_db_call
    def hello(self, placeholder_id: str, site: str, host: str) -> float | None:
        return self.store.placeholder_started(placeholder_id, site, host)

    @_db_call
    def claim(
        self,
        placeholder_id: str,
        site: str,
        free: FreeResources,
        limit: int,
        *,
        ahead: int = 0,
        whole: FreeResources | None = None,
    ) -> ClaimResult:
        return self.store.claim(site, placeholder_id, free, limit=limit, ahead=ahead, whole=whole)

    @_db_call
    def heartbeat(
        self,
        placeholder_id: str,
        holding: Sequence[tuple[int, int]] | None = None,
        fenced: Sequence[tuple[int, int]] = (),
    ) -> dict[int, int]:
        return self.store.heartbeat(placeholder_id, holding=holding, fenced=fenced)

    @_db_call
    def complete(self, placeholder_id: str, results: list[Completion]) -> list[bool]:
        return [
            self.store.complete(
                r.job_id,
                placeholder_id,
                r.attempt,
                r.exit_code,
                start_at=r.start_at,
                end_at=r.end_at,
                stdout_path=r.stdout_path,
                stderr_path=r.stderr_path,
            )
            for r in results
        ]

    @_db_call
    def report(
        self,
        placeholder_id: str,
        results: list[Completion],
        site: str,
        free: FreeResources | None,
        limit: int,
        *,
        ahead: int = 0,
        whole: FreeResources | None = None,
        release: Sequence[tuple[int, int]] = (),
    ) -> tuple[list[bool], ClaimResult | None]:
        return self.store.report(
            placeholder_id,
            [_result(r) for r in results],
            claim_site=site if free else None,
            free=free,
            limit=limit,
            ahead=ahead,
            whole=whole,
            release=[{"job_id": j, "attempt": a} for j, a in release],
        )

    @_db_call
    def wait_for_work(self, timeout_s: float) -> None:
        self.store.wait_for_change(timeout_s)

    @_db_call
    def bye(self, placeholder_id: str, state: str) -> None:
        self.store.update_placeholder(placeholder_id, state=state, ended_at=time.time())

    def close(self) -> None:
        self.store.close()


class HttpTransport(Transport):
    """To ``metasched server`` with the bearer token, on one kept-alive HTTP/1.1 connection.

    :mod:`http.client` rather than httpx: a placeholder makes one small request per job (or batch),
    and httpx's per-request machinery cost ~1 ms of CPU, as much as the server's answer. A broken
    connection is dropped and the call raises ``ConnectionError`` (the agent retries; the next call
    connects again).
    """

    def __init__(self, url: str, token: str, *, timeout_s: float = 10.0):
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"metaqueue server URL must be http(s)://host[:port][/prefix], not {url!r}")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path
        self.timeout_s = timeout_s
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.conn: http.client.HTTPConnection | None = None
        #: The server's change counter as its last ``/v1/wait`` answered (None: ask for it), and whether the
        #: server has that route.
        self._wait_version: int | None = None
        self._wait_route = True

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            self.conn = cls(self.host, self.port, timeout=self.timeout_s)
        return self.conn

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        conn = self._connection()
        try:
            conn.request("POST", self.prefix + path, body=json.dumps(body).encode(), headers=self.headers)
            resp = conn.getresponse()
            status, text = resp.status, resp.read().decode(errors="replace")
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise ConnectionError(f"metaqueue server unreachable: {exc}") from exc
        if status >= 500:
            raise ServerError(f"metaqueue server error {status} on {path}: {text[:200]}")
        if status >= 400:
            raise Refused(f"metaqueue server refused {path}: {status} {text[:200]}")
        return json.loads(text)

    def hello(self, placeholder_id: str, site: str, host: str) -> float | None:
        out = self._post("/v1/hello", {"placeholder_id": placeholder_id, "site": site, "host": host})
        wait = out.get("wait_s")
        return None if wait is None else float(wait)

    def claim(
        self,
        placeholder_id: str,
        site: str,
        free: FreeResources,
        limit: int,
        *,
        ahead: int = 0,
        whole: FreeResources | None = None,
    ) -> ClaimResult:
        out = self._post("/v1/claim", _claim_body(placeholder_id, site, free, limit, ahead, whole))
        return ClaimResult(out["action"], [ClaimedJob(**j) for j in out["jobs"]])

    def heartbeat(
        self,
        placeholder_id: str,
        holding: Sequence[tuple[int, int]] | None = None,
        fenced: Sequence[tuple[int, int]] = (),
    ) -> dict[int, int]:
        body: dict[str, Any] = {"placeholder_id": placeholder_id}
        if holding is not None:
            body["holding"] = [[j, a] for j, a in holding]
            body["fenced"] = [[j, a] for j, a in fenced]
        out = self._post("/v1/heartbeat", body)
        return {int(k): int(v) for k, v in out["held"].items()}

    def wait_for_work(self, timeout_s: float) -> None:
        """The server's long poll (``/v1/wait``): back as soon as the metaqueue changes, not after a sleep.

        Held at most ``timeout_s`` and under this transport's time-out; a server without the route (older), or
        one that cannot be reached, makes this a plain sleep (the agent's claim then reports the trouble)."""
        end = time.monotonic() + timeout_s
        hold = min(timeout_s, self.timeout_s - 1.0)
        if self._wait_route and hold > 0.01:
            try:
                out = self._post("/v1/wait", {"since": self._wait_version, "timeout_s": round(hold, 3)})
                self._wait_version = int(out["version"])
                return
            except Refused:
                self._wait_route = False
            except (ConnectionError, ServerError, KeyError, TypeError, ValueError):
                pass
        time.sleep(max(0.0, end - time.monotonic()))

    def bound(self, timeout_s: float) -> None:
        self.timeout_s = min(self.timeout_s, timeout_s)
        if self.conn is not None:
            self.conn.timeout = self.timeout_s
            if self.conn.sock is not None:
                self.conn.sock.settimeout(self.timeout_s)

    def complete(self, placeholder_id: str, results: list[Completion]) -> list[bool]:
        out = self._post("/v1/complete", {"placeholder_id": placeholder_id, "results": [_result(r) for r in results]})
        return [bool(a) for a in out["accepted"]]

    def report(
        self,
        placeholder_id: str,
        results: list[Completion],
        site: str,
        free: FreeResources | None,
        limit: int,
        *,
        ahead: int = 0,
        whole: FreeResources | None = None,
        release: Sequence[tuple[int, int]] = (),
    ) -> tuple[list[bool], ClaimResult | None]:
        body: dict[str, Any] = {"placeholder_id": placeholder_id, "results": [_result(r) for r in results]}
        if release:
            body["release"] = [{"job_id": j, "attempt": a} for j, a in release]
        if free is not None:
            body["claim"] = _claim_body(placeholder_id, site, free, limit, ahead, whole)
        out = self._post("/v1/complete", body)
        claim = out.get("claim")
        return [bool(a) for a in out["accepted"]], (
            ClaimResult(claim["action"], [ClaimedJob(**j) for j in claim["jobs"]]) if claim else None
        )

    def bye(self, placeholder_id: str, state: str) -> None:
        self._post("/v1/bye", {"placeholder_id": placeholder_id, "state": state})

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _claim_body(
    placeholder_id: str, site: str, free: FreeResources, limit: int, ahead: int, whole: FreeResources | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "placeholder_id": placeholder_id,
        "site": site,
        "cpus": free.cpus,
        "mem_mb": free.mem_mb,
        "remaining_s": free.remaining_s,
        "limit": limit,
    }
    if free.nodes != 1 or free.node_cpus is not None:  # a placeholder of several nodes (parallel jobs)
        body.update(nodes=free.nodes, node_cpus=free.node_cpus)
    if ahead > 0 and whole is not None:
        body.update(ahead=ahead, whole_cpus=whole.cpus, whole_mem_mb=whole.mem_mb, whole_nodes=whole.nodes)
    return body


def _result(r: Completion) -> dict[str, Any]:
    return {
        "job_id": r.job_id,
        "attempt": r.attempt,
        "exit_code": r.exit_code,
        "start_at": r.start_at,
        "end_at": r.end_at,
        "stdout_path": _path(r.stdout_path),
        "stderr_path": _path(r.stderr_path),
    }


def _path(path: str | None) -> str | None:
    return path if path is None or len(path) <= MAX_PATH else None


def token_path() -> Path:
    """``$METASCHED_HOME/token`` (the home created 0700 if missing)."""
    return private_dir(Path(os.environ.get("METASCHED_HOME") or Path.home() / ".metasched")) / "token"


def ensure_token(path: Path | None = None) -> str:
    """The server's bearer token, created on first use (random, 43 characters; written atomically, 0600).

    An existing file must hold a usable token (:func:`~metasched.runtime.metaqueue.secure.check_token`):
    an empty or short one raises :class:`TokenError` naming the file, it never switches auth off."""
    path = path or token_path()
    if not path.exists():
        write_private(path, secrets.token_urlsafe(32) + "\n", replace=False)
    return _read_token_file(path)


def _read_token_file(path: Path) -> str:
    try:
        text = path.read_text()
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenError(f"cannot read the bearer token, {path}: {getattr(exc, 'strerror', None) or exc}") from None
    token = check_token(text.strip(), f"in {path}")
    if mode & 0o077:
        logging.getLogger("metasched.secure").warning(
            "the bearer token %s is readable by other users (mode %04o): `chmod 600 %s`", path, mode & 0o777, path
        )
    return token


def read_token(path: str | Path | None = None) -> str:
    """Token for clients: ``$METASCHED_TOKEN``, else the file (default ``$METASCHED_HOME/token``); checked
    as the server checks its own (an empty token is refused here, not sent)."""
    if path is None and os.environ.get("METASCHED_TOKEN") is not None:
        return check_token(os.environ["METASCHED_TOKEN"].strip(), "in $METASCHED_TOKEN")
    p = Path(path) if path else token_path()
    if not p.exists():
        raise TokenError(f"no server token at {p}: start `metasched server` first or set METASCHED_TOKEN")
    return _read_token_file(p)
