"""The placeholder protocol: what a placeholder says to the metaqueue, over HTTP or straight to the store.

Both transports offer the same five calls (``hello``, ``claim``, ``heartbeat``, ``complete``,
``bye``), so one placeholder agent runs against the service (many users, remote sites) or against
the database (small setups, no server).
"""

from __future__ import annotations

import os
import secrets
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.records import ClaimedJob, ClaimResult

if TYPE_CHECKING:
    from metasched.runtime.metaqueue.store import Store


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
    """How a placeholder talks to the metaqueue. Every call may raise ``ConnectionError`` (retry later)."""

    @abstractmethod
    def hello(self, placeholder_id: str, site: str, host: str) -> float | None: ...

    @abstractmethod
    def claim(self, placeholder_id: str, site: str, free: FreeResources, limit: int) -> ClaimResult: ...

    @abstractmethod
    def heartbeat(self, placeholder_id: str) -> dict[int, int]: ...

    @abstractmethod
    def complete(self, placeholder_id: str, results: list[Completion]) -> list[bool]: ...

    @abstractmethod
    def bye(self, placeholder_id: str, state: str) -> None: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class StoreTransport(Transport):
    """Straight to the database (SQLite file or PostgreSQL URL)."""

    def __init__(self, store: Store):
        self.store = store

    def hello(self, placeholder_id: str, site: str, host: str) -> float | None:
        return self.store.placeholder_started(placeholder_id, site, host)

    def claim(self, placeholder_id: str, site: str, free: FreeResources, limit: int) -> ClaimResult:
        return self.store.claim(site, placeholder_id, free, limit=limit)

    def heartbeat(self, placeholder_id: str) -> dict[int, int]:
        return self.store.heartbeat(placeholder_id)

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

    def bye(self, placeholder_id: str, state: str) -> None:
        self.store.update_placeholder(placeholder_id, state=state, ended_at=time.time())

    def close(self) -> None:
        self.store.close()


class HttpTransport(Transport):
    """To ``metasched server`` with the bearer token."""

    def __init__(self, url: str, token: str, *, timeout_s: float = 10.0):
        self.client = httpx.Client(
            base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {token}"}, timeout=timeout_s
        )

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        try:
            resp = self.client.post(path, json=body)
        except httpx.TransportError as exc:
            raise ConnectionError(f"metaqueue server unreachable: {exc}") from exc
        if resp.status_code >= 500:
            raise ConnectionError(f"metaqueue server error {resp.status_code}: {resp.text[:200]}")
        if resp.status_code >= 400:
            raise PermissionError(f"metaqueue server refused {path}: {resp.status_code} {resp.text[:200]}")
        return resp.json()

    def hello(self, placeholder_id: str, site: str, host: str) -> float | None:
        out = self._post("/v1/hello", {"placeholder_id": placeholder_id, "site": site, "host": host})
        wait = out.get("wait_s")
        return None if wait is None else float(wait)

    def claim(self, placeholder_id: str, site: str, free: FreeResources, limit: int) -> ClaimResult:
        out = self._post(
            "/v1/claim",
            {
                "placeholder_id": placeholder_id,
                "site": site,
                "cpus": free.cpus,
                "mem_mb": free.mem_mb,
                "remaining_s": free.remaining_s,
                "limit": limit,
            },
        )
        return ClaimResult(out["action"], [ClaimedJob(**j) for j in out["jobs"]])

    def heartbeat(self, placeholder_id: str) -> dict[int, int]:
        out = self._post("/v1/heartbeat", {"placeholder_id": placeholder_id})
        return {int(k): int(v) for k, v in out["held"].items()}

    def complete(self, placeholder_id: str, results: list[Completion]) -> list[bool]:
        out = self._post(
            "/v1/complete",
            {
                "placeholder_id": placeholder_id,
                "results": [
                    {
                        "job_id": r.job_id,
                        "attempt": r.attempt,
                        "exit_code": r.exit_code,
                        "start_at": r.start_at,
                        "end_at": r.end_at,
                        "stdout_path": r.stdout_path,
                        "stderr_path": r.stderr_path,
                    }
                    for r in results
                ],
            },
        )
        return [bool(a) for a in out["accepted"]]

    def bye(self, placeholder_id: str, state: str) -> None:
        self._post("/v1/bye", {"placeholder_id": placeholder_id, "state": state})

    def close(self) -> None:
        self.client.close()


def token_path() -> Path:
    home = Path(os.environ.get("METASCHED_HOME") or Path.home() / ".metasched")
    home.mkdir(parents=True, exist_ok=True)
    return home / "token"


def ensure_token(path: Path | None = None) -> str:
    """The server's bearer token, created (0600, owner only) on first use."""
    path = path or token_path()
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return token


def read_token(path: str | Path | None = None) -> str:
    """Token for clients: ``$METASCHED_TOKEN``, else the file (default ``$METASCHED_HOME/token``)."""
    if path is None and os.environ.get("METASCHED_TOKEN"):
        return os.environ["METASCHED_TOKEN"]
    p = Path(path) if path else token_path()
    try:
        return p.read_text().strip()
    except OSError:
        raise PermissionError(
            f"no server token at {p}: start `metasched server` first or set METASCHED_TOKEN"
        ) from None
