"""The HTTP API for users of ``metasched server`` (issue 36), version 1, under ``/v1/jobs``.

Who calls: a user with the token ``metasched user add`` printed (sees and acts on their own jobs), or the
admin with the server's token (every job). A placeholder's site/agent token (``metasched server
--agent-token-file``) is refused here (403), as a user's token is refused by the placeholder protocol (401).
Another user's job is answered exactly as a job that does not exist: 404.

Errors are JSON ``{"error": {"code": ..., "message": ...}}``: ``unauthorized`` (401), ``forbidden`` (403),
``not_found`` (404), ``bad_request`` (400: the metaqueue refuses, e.g. an unknown dependency or state),
``invalid`` (422: a body that does not fit its model, with the path of each error).

Bodies reuse the workflow file's description of a job (:class:`~.workflow_model.SubmitOptions`): the same
checks and messages as ``metasched submit`` and ``submit-workflow``.
"""

# No ``from __future__ import annotations``: FastAPI reads the routes' annotations, which name the
# dependency built inside mount_user_api.
import hmac
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, model_validator

from metasched.runtime.metaqueue.arrays import MAX_ARRAY, expand, parse_after, parse_array
from metasched.runtime.metaqueue.records import ADMIN, JobSpec, NotFound, StoreError
from metasched.runtime.metaqueue.secure import bearer_credentials
from metasched.runtime.metaqueue.store import Store
from metasched.runtime.metaqueue.userops import MAX_WAIT_S, LogUnavailable, UserQueue
from metasched.runtime.metaqueue.workflow_model import Command, SubmitOptions

_BEARER = HTTPBearer(auto_error=False)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


class JobBody(SubmitOptions):
    """One job: the fields of a workflow entry; ``command`` a shell command line or an argv list."""

    command: Command | list[str] = Field(description="A shell command line, or an argv list (quoted for you).")
    cwd: str | None = Field(None, description="Working directory on the site (default: the placeholder's).")
    env: dict[str, str] = Field(default_factory=dict, max_length=1000, description="Extra environment variables.")

    def spec(self) -> JobSpec:
        import shlex

        command = self.command if isinstance(self.command, str) else shlex.join(self.command)
        if not command.strip():
            raise StoreError("command: empty")
        refs, kinds = parse_after(self.after)
        return JobSpec(
            command=command,
            name=self.name,
            after=refs,
            after_kinds=kinds,
            cpus=self.cpus,
            tasks=self.tasks,
            nodes=self.nodes,
            mem_mb=self.mem,
            licences=dict(self.licences),
            time_s=self.time,
            cwd=self.cwd or "",
            env=dict(self.env),
            max_attempts=self.max_attempts,
            deadline_s=self.deadline,
            user_class=self.user_class,
            params=dict(self.params),
        )


class SubmitBody(BaseModel):
    """``jobs``: one job, or a workflow (all or nothing). ``array`` (with one job): ``1-100[:step][%max]``;
    ``lines`` (with one job): one element per line, as ``metasched submit --each-line``."""

    model_config = ConfigDict(extra="forbid")

    jobs: list[JobBody] = Field(min_length=1, max_length=MAX_ARRAY)
    array: str | None = Field(None, max_length=10_000, examples=["1-100%10"])
    lines: list[str] | None = Field(None, max_length=MAX_ARRAY)

    @model_validator(mode="after")
    def _one_job_for_arrays(self) -> "SubmitBody":
        if (self.array is not None or self.lines is not None) and len(self.jobs) != 1:
            raise ValueError("array and lines take exactly one job")
        if self.array is not None and self.lines is not None:
            raise ValueError("give array or lines, not both")
        return self

    def specs(self) -> list[JobSpec]:
        specs = [j.spec() for j in self.jobs]
        if self.array is not None:
            indices, limit = parse_array(self.array)
            return expand(specs[0], indices, limit)
        if self.lines is not None:
            return expand(specs[0], [], None, lines=self.lines)
        return specs


class RefsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    jobs: list[str | int] = Field(min_length=1, max_length=MAX_ARRAY)


class WaitBody(RefsBody):
    timeout: float = Field(30.0, ge=0, le=MAX_WAIT_S, description="seconds to wait at most (long poll)")


class Identity(BaseModel):
    user: str
    role: Literal["user", "admin"]


def mount_user_api(app: FastAPI, store: Store, admin_token: str, agent_token: str | None = None) -> None:
    """Add the user routes (``/v1/jobs``...) and the JSON error handlers to ``app``."""
    admin, agent = admin_token.encode(), (agent_token.encode() if agent_token and agent_token != admin_token else None)

    async def identity(request: Request, _doc: Annotated[Any, Depends(_BEARER)] = None) -> UserQueue:
        token = bearer_credentials(request.scope["headers"])  # the one parser of every route
        if token is None:
            raise ApiError(401, "unauthorized", "missing bearer token (Authorization: Bearer TOKEN)")
        if hmac.compare_digest(token, admin):
            return UserQueue(store, ADMIN, admin=True)
        if agent is not None and hmac.compare_digest(token, agent):
            raise ApiError(403, "forbidden", "a placeholder (site) token cannot use the user API")
        found = await run_in_threadpool(store.user_for_token, token.decode(errors="replace"))
        if found is None:
            raise ApiError(401, "unauthorized", "unknown token (metasched user add NAME issues one)")
        name, role = found
        return UserQueue(store, name, admin=role == "admin")

    User = Annotated[UserQueue, Depends(identity)]
    router = APIRouter(prefix="/v1", tags=["jobs (users)"])

    async def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await run_in_threadpool(fn, *args, **kwargs)
        except NotFound as exc:
            raise ApiError(404, "not_found", str(exc)) from None
        except LogUnavailable as exc:  # the site or the file, not the request
            raise ApiError(502, "log_unavailable", str(exc)) from None
        except StoreError as exc:
            raise ApiError(400, "bad_request", str(exc)) from None

    @router.get("/whoami", response_model=Identity)
    async def whoami(q: User) -> Identity:
        """Who this token is."""
        return Identity(user=q.owner, role="admin" if q.admin else "user")

    @router.post("/jobs", status_code=201)
    async def submit(body: SubmitBody, q: User) -> dict[str, list[int]]:
        """Submit one job, a workflow (all or nothing) or an array, in one transaction: ``{"ids": [...]}``."""

        def run() -> list[int]:
            return q.submit(body.specs())

        return {"ids": await call(run)}

    @router.get("/jobs")
    async def list_jobs(
        q: User,
        state: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies it)
        name: str | None = None,
        owner: Annotated[list[str], Query()] = [],  # noqa: B006
        id: Annotated[list[int], Query()] = [],  # noqa: B006
    ) -> dict[str, Any]:
        """Your jobs (an admin: everyone's), filtered by state, name (``*`` wildcard), owner, id."""
        return {"jobs": await call(q.jobs, states=state, name=name, owners=owner, ids=id)}

    @router.get("/jobs/{ref}")
    async def show(ref: str, q: User) -> dict[str, Any]:
        """One job (by id or name) with its reason, dependencies and history."""
        return dict(await call(q.job, ref))

    @router.post("/jobs/cancel")
    async def cancel_many(body: RefsBody, q: User) -> dict[str, list[int]]:
        """Cancel queued or running jobs (all named must be yours)."""
        return {"cancelled": await call(q.cancel, [str(r) for r in body.jobs])}

    @router.post("/jobs/retry")
    async def retry_many(body: RefsBody, q: User) -> dict[str, list[int]]:
        """Queue failed, cancelled or dependency-failed jobs again (and the dependents they held back)."""
        return {"requeued": await call(q.retry, [str(r) for r in body.jobs])}

    @router.post("/jobs/{ref}/cancel")
    async def cancel(ref: str, q: User) -> dict[str, list[int]]:
        """Cancel one job."""
        return {"cancelled": await call(q.cancel, [ref])}

    @router.post("/jobs/{ref}/retry")
    async def retry(ref: str, q: User) -> dict[str, list[int]]:
        """Retry one job."""
        return {"requeued": await call(q.retry, [ref])}

    @router.post("/jobs/wait")
    async def wait(body: WaitBody, q: User) -> dict[str, Any]:
        """Long poll: answers when every job named has ended, or after ``timeout`` s (``ended`` says which)."""
        rows = await call(q.wait, body.jobs, body.timeout)
        return {"ended": all(r["state"] in _TERMINAL for r in rows), "jobs": rows}

    @router.get("/jobs/{ref}/logs", response_class=PlainTextResponse)
    async def logs(
        ref: str, q: User, stream: Literal["stdout", "stderr", "auto"] = "auto", tail: str | None = None
    ) -> PlainTextResponse:
        """The job's stdout or stderr (``auto``: stdout, else stderr when that is all it wrote), read on its
        site over SSH when the site is remote. ``tail``: ``N`` lines or ``Nc``/``Nk``/``NM`` bytes. At most
        16 MiB, the end kept; headers ``X-Log-Size`` (bytes of the whole file), ``X-Log-Truncated``
        (``true``/``false``), ``X-Log-Where``. HTTP 502 ``log_unavailable`` when the site is unreachable,
        the read timed out or the file is gone (the message names the site and the path)."""
        text = await call(q.logs, ref, stream, tail)
        headers = {
            "X-Log-Size": str(getattr(text, "size", len(text.encode()))),
            "X-Log-Truncated": "true" if getattr(text, "truncated", False) else "false",
            "X-Log-Where": getattr(text, "where", "").encode("ascii", "replace").decode(),
        }
        return PlainTextResponse(text, headers=headers)

    app.include_router(router)

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.message), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _locations(exc.errors())
        if not request.url.path.startswith("/v1/jobs"):  # the placeholder protocol keeps FastAPI's shape
            return JSONResponse({"detail": jsonable(exc.errors())}, status_code=422)
        message = "; ".join(f"{e['loc']}: {e['msg']}" for e in errors[:3])
        return JSONResponse(error_body("invalid", message, errors=errors), status_code=422)


_TERMINAL = {"done", "failed", "cancelled", "dep_failed"}


def _locations(errors: Sequence[Any]) -> list[dict[str, str]]:
    out = []
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()) if not str(p).startswith("function-"))
        out.append({"loc": loc, "msg": str(e.get("msg", "")).removeprefix("Value error, ")})
    return out


def jsonable(errors: Sequence[Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]
