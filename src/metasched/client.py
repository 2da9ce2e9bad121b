"""The Python API of the metaqueue: ``from metasched import Client`` (issue 36).

``Client()`` works on the embedded database (``$METASCHED_DB`` or the SQLite file in ``$METASCHED_HOME``),
as the CLI does, with the admin's rights; ``Client(url, token)`` talks to ``metasched server`` over HTTP
as the user whose token it is (``metasched user add NAME`` prints one). Both give the same answers:
the embedded client runs the very operations the server runs (:class:`~metasched.runtime.metaqueue.userops.UserQueue`).

>>> from metasched import Client
>>> client = Client(db=f"sqlite:///{tmp}/doc.db")
>>> job = client.submit("echo hello", name="hello", time="10")
>>> job.name, job.state
('hello', 'queued')
>>> [j.id for j in client.jobs(state="queued")] == [job.id]
True
>>> client.job(9999)
Traceback (most recent call last):
...
metasched.runtime.metaqueue.records.NotFound: unknown job(s): 9999
"""

from __future__ import annotations

import os
import shlex
import time as _time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from metasched.runtime.metaqueue.records import JobSpec, NotFound, StoreError

__all__ = ["Client", "Error", "Job", "JobArray", "NotFound"]

#: Every refusal of the metaqueue (bad option, unknown dependency, a job that is not yours...).
Error = StoreError
TERMINAL = frozenset({"done", "failed", "cancelled", "dep_failed"})


class Job:
    """A job of the metaqueue as last read. ``state``, ``exit_code`` and ``reason`` are read again while the
    job has not ended; :meth:`info` is everything the metaqueue knows (its history too)."""

    def __init__(self, client: Client, data: dict[str, Any]) -> None:
        self._client = client
        self._data = data

    def __repr__(self) -> str:
        return f"Job(id={self.id}, name={self.name!r}, state={self._data['state']!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Job) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def id(self) -> int:
        return int(self._data["id"])

    @property
    def name(self) -> str | None:
        return self._data.get("name")

    def _fresh(self) -> dict[str, Any]:
        if self._data["state"] not in TERMINAL:
            self.refresh()
        return self._data

    @property
    def state(self) -> str:
        return str(self._fresh()["state"])

    @property
    def exit_code(self) -> int | None:
        return self._fresh().get("exit_code")

    @property
    def reason(self) -> str:
        return str(self._fresh().get("reason") or "")

    def refresh(self) -> Job:
        self._data = self._client._backend.job(self.id, history=False)
        return self

    def info(self) -> dict[str, Any]:
        """The job as the metaqueue shows it (``metasched show``): reason, dependencies, history."""
        self._data = self._client._backend.job(self.id, history=True)
        return dict(self._data)

    def wait(self, timeout: float | None = None) -> Job:
        """Block until the job has ended (done, failed, cancelled, dependency failed); ``TimeoutError``
        after ``timeout`` seconds. Returns the job."""
        self._client.wait([self], timeout=timeout)
        return self

    def cancel(self) -> bool:
        """Cancel it if queued or running; False when it had ended already."""
        return bool(self._client._backend.cancel([self.id]))

    def retry(self) -> bool:
        return bool(self._client._backend.retry([self.id]))

    def logs(self, stream: str = "auto", tail: int | str | None = None) -> str:
        """Its output: ``stdout``, ``stderr``, or ``auto`` (stdout, else stderr when that is all it wrote);
        read on its site over SSH when the site is remote. ``tail``: the last ``N`` lines, or ``"Nc"`` bytes
        (``"Nk"``, ``"NM"``). At most 16 MiB, the end kept: the answer (a ``str``) has ``.truncated``,
        ``.size`` (bytes of the whole file) and ``.note`` (one line saying what is shown, or None)."""
        return self._client._backend.logs(self.id, stream, tail)


class JobArray(Job):
    """An array (``submit(..., array=...)`` or ``each_line=``): a :class:`Job` standing for all its elements,
    and the sequence of them (``len``, ``[i]``, iteration). ``id`` is the first element's; ``state`` is
    ``queued`` or ``running`` while any element is, then ``done`` when all are done, else the worst ending
    (``failed``, ``cancelled``, ``dep_failed``); ``exit_code`` is the worst element's; ``wait``, ``cancel`` and
    ``retry`` act on every element; ``logs`` joins the elements' outputs in index order."""

    _ENDINGS = ("failed", "cancelled", "dep_failed")

    def __init__(self, client: Client, jobs: list[Job]) -> None:
        self.jobs = jobs
        super().__init__(client, jobs[0]._data)

    def __repr__(self) -> str:
        return f"JobArray(ids={self.jobs[0].id}..{self.jobs[-1].id}, n={len(self.jobs)})"

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs)

    def __getitem__(self, i: int) -> Job:
        return self.jobs[i]

    def _summary(self) -> dict[str, Any]:
        self.refresh()
        states = [j._data["state"] for j in self.jobs]
        if "running" in states:
            state = "running"
        elif "queued" in states:
            state = "queued"
        elif all(st == "done" for st in states):
            state = "done"
        else:
            state = next(e for e in self._ENDINGS if e in states)
        codes: list[int] = [int(j._data["exit_code"]) for j in self.jobs if j._data.get("exit_code") is not None]
        worst = max(codes, key=lambda c: (c != 0, abs(c)), default=None)
        return {**self.jobs[0]._data, "state": state, "exit_code": worst, "reason": ""}

    def _fresh(self) -> dict[str, Any]:
        return self._summary()

    def refresh(self) -> Job:
        rows = {r["id"]: r for r in self._client._backend.jobs(states=[], name=None, owners=[], ids=self.ids)}
        for j in self.jobs:
            j._data = rows.get(j.id, j._data)
        return self

    @property
    def ids(self) -> list[int]:
        return [j.id for j in self.jobs]

    def info(self) -> dict[str, Any]:
        return {**self._summary(), "elements": [j._data for j in self.jobs]}

    def wait(self, timeout: float | None = None) -> Job:
        self._client.wait(self.jobs, timeout=timeout)
        return self

    def cancel(self) -> bool:
        return bool(self._client._backend.cancel(self.ids))

    def retry(self) -> bool:
        broken = [j.id for j in self.jobs if j.state in self._ENDINGS]
        return bool(broken) and bool(self._client._backend.retry(broken))

    def logs(self, stream: str = "auto", tail: int | str | None = None) -> str:
        return "".join(j.logs(stream, tail) for j in self.jobs)


class Client:
    """The metaqueue, embedded (``url=None``) or through ``metasched server`` at ``url``.

    ``token``: the user's token (default ``$METASCHED_TOKEN``, else the file ``$METASCHED_TOKEN_FILE``).
    ``db``: the embedded database's URL (default ``$METASCHED_DB`` or the SQLite file in ``$METASCHED_HOME``).
    """

    def __init__(self, url: str | None = None, token: str | None = None, *, db: str | None = None) -> None:
        self.url = url
        self._backend: _Backend = _Http(url, _token(token)) if url else _Embedded(db)

    def close(self) -> None:
        self._backend.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ submit

    def submit(
        self,
        command: str | Sequence[str],
        *,
        name: str | None = None,
        after: str | Iterable[str | int | Job] = (),
        cpus: int = 1,
        mem: str | int | None = None,
        time: str | float | None = None,
        array: str | None = None,
        env: dict[str, str] | None = None,
        each_line: Sequence[str] | None = None,
        cwd: str | None = None,
        licences: dict[str, int] | Sequence[str] | None = None,
        max_attempts: int | None = None,
    ) -> Job:
        """Submit one job; with ``array`` (``"1-100[:step][%max]"``) or ``each_line`` (a list of lines) an
        array, returned as a :class:`JobArray` (a Job for all its elements, and the sequence of them).
        ``command``: a shell command line, or an argv list.
        ``after``: names, ids or jobs (``"afterany:NAME"`` / ``"afternotok:NAME"`` for the other kinds).
        ``time`` as ``sbatch --time`` (a bare number: minutes)."""
        refs = [after] if isinstance(after, str) else [str(a.id if isinstance(a, Job) else a) for a in after]
        job: dict[str, Any] = {
            "command": command if isinstance(command, str) else list(command),
            "name": name,
            "after": refs,
            "cpus": cpus,
            "mem": mem,
            "time": time,
            "env": dict(env or {}),
            "cwd": cwd if cwd is not None else os.getcwd(),
            "licences": licences,
            "max_attempts": max_attempts,
        }
        job = {k: v for k, v in job.items() if v is not None}
        body: dict[str, Any] = {"jobs": [job]}
        if array is not None and each_line is not None:
            raise Error("give array or each_line, not both")
        if array is not None:
            body["array"] = array
        if each_line is not None:
            body["lines"] = list(each_line)
        ids = self._backend.submit(body)
        jobs = self._fetch(ids)
        return JobArray(self, jobs) if (array is not None or each_line is not None) else jobs[0]

    def submit_workflow(self, path_or_list: str | Path | Sequence[dict[str, Any] | JobSpec]) -> list[Job]:
        """Submit a workflow (all or nothing): a YAML/Trellis file, or a list of job mappings as in the
        file (or of :class:`~metasched.runtime.metaqueue.records.JobSpec`, as ``read_workflow`` returns)."""
        if isinstance(path_or_list, str | Path):
            from metasched.runtime.metaqueue.workflow import read_workflow

            specs = read_workflow(path_or_list, default_cwd=os.getcwd())
            entries = [_entry(s) for s in specs]
        else:
            entries = [_entry(e) if isinstance(e, JobSpec) else dict(e) for e in path_or_list]
            for e in entries:
                e.setdefault("cwd", os.getcwd())
        return self._fetch(self._backend.submit({"jobs": entries}))

    # ------------------------------------------------------------------ queries

    def jobs(
        self, state: str | Sequence[str] | None = None, name: str | None = None, owner: str | None = None
    ) -> list[Job]:
        """Your jobs (the admin's client: everyone's), by state(s) and name (``*`` wildcard)."""
        states = [state] if isinstance(state, str) else list(state or [])
        rows = self._backend.jobs(states=states, name=name, owners=[owner] if owner else [], ids=[])
        return [Job(self, r) for r in rows]

    def job(self, id: int | str) -> Job:
        """The job with this id (or name); :class:`NotFound` when it does not exist or is not yours."""
        return Job(self, self._backend.job(id, history=False))

    def wait(self, jobs: Iterable[Job | int | str], timeout: float | None = None) -> list[Job]:
        """Block until every job has ended; ``TimeoutError`` after ``timeout`` s. Returns them, fresh."""
        jobs = list(jobs)
        wanted = [j.id if isinstance(j, Job) else j for j in jobs]
        end = None if timeout is None else _time.monotonic() + timeout
        while True:
            left = None if end is None else max(0.0, end - _time.monotonic())
            rows = self._backend.wait(wanted, 30.0 if left is None else min(30.0, left))
            if all(r["state"] in TERMINAL for r in rows):
                out = [Job(self, r) for r in rows]
                for j in jobs:
                    if isinstance(j, Job):
                        j._data = next(r for r in rows if r["id"] == j.id)
                return out
            if end is not None and _time.monotonic() >= end:
                waiting = [str(r["name"] or r["id"]) for r in rows if r["state"] not in TERMINAL]
                raise TimeoutError(f"jobs still running after {timeout} s: {', '.join(waiting[:10])}")

    def _fetch(self, ids: Sequence[int]) -> list[Job]:
        rows = {r["id"]: r for r in self._backend.jobs(states=[], name=None, owners=[], ids=list(ids))}
        return [Job(self, rows[i]) for i in ids]


def _entry(spec: Any) -> dict[str, Any]:
    """A :class:`JobSpec` read from a file -> the API's job body (the same fields)."""
    after = [(f"after{spec.after_kinds[r]}:{r}" if r in spec.after_kinds else r) for r in spec.after]
    out = {
        "command": spec.command,
        "name": spec.name,
        "after": after,
        "cpus": spec.cpus,
        "tasks": spec.tasks,
        "nodes": spec.nodes,
        "mem": spec.mem_mb,
        "time": f"{spec.time_s}s",
        "licences": spec.licences,
        "cwd": spec.cwd,
        "env": spec.env,
        "max_attempts": spec.max_attempts,
        "user_class": spec.user_class,
        "params": spec.params,
    }
    if spec.deadline_s is not None:
        out["deadline"] = f"{spec.deadline_s}s"
    return out


def _token(token: str | None) -> str:
    if token:
        return token
    if os.environ.get("METASCHED_TOKEN"):
        return os.environ["METASCHED_TOKEN"]
    path = os.environ.get("METASCHED_TOKEN_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise Error(f"cannot read the token file {path}: {exc.strerror}") from None
    raise Error("a server needs a token: Client(url, token=...), $METASCHED_TOKEN or $METASCHED_TOKEN_FILE")


class _Backend:
    def submit(self, body: dict[str, Any]) -> list[int]:
        raise NotImplementedError

    def jobs(self, **filters: Any) -> list[dict[str, Any]]:
        raise NotImplementedError

    def job(self, ref: int | str, history: bool) -> dict[str, Any]:
        raise NotImplementedError

    def cancel(self, refs: Sequence[int | str]) -> list[int]:
        raise NotImplementedError

    def retry(self, refs: Sequence[int | str]) -> list[int]:
        raise NotImplementedError

    def wait(self, refs: Sequence[int | str], timeout: float) -> list[dict[str, Any]]:
        raise NotImplementedError

    def logs(self, ref: int | str, stream: str, tail: int | str | None = None) -> str:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _Embedded(_Backend):
    """The database itself, with the admin's rights (whoever can open it is the operator)."""

    def __init__(self, db: str | None) -> None:
        from metasched.runtime.metaqueue.store import Store
        from metasched.runtime.metaqueue.userops import UserQueue

        self.store = Store.open(db)
        self.q = UserQueue(self.store)

    def submit(self, body: dict[str, Any]) -> list[int]:
        # The same checks as the server's (light: no pydantic, so that ``metasched submit`` stays quick).
        from metasched.runtime.metaqueue.arrays import expand, parse_array

        specs = [spec_of(j) for j in body["jobs"]]
        if "array" in body:
            indices, limit = parse_array(body["array"])
            specs = expand(specs[0], indices, limit)
        elif "lines" in body:
            specs = expand(specs[0], [], None, lines=body["lines"])
        return self.q.submit(specs)

    def jobs(self, **filters: Any) -> list[dict[str, Any]]:
        return self.q.jobs(**filters)

    def job(self, ref: int | str, history: bool) -> dict[str, Any]:
        return self.q.job(ref, history=history)

    def cancel(self, refs: Sequence[int | str]) -> list[int]:
        return self.q.cancel([str(r) for r in refs])

    def retry(self, refs: Sequence[int | str]) -> list[int]:
        return self.q.retry([str(r) for r in refs])

    def wait(self, refs: Sequence[int | str], timeout: float) -> list[dict[str, Any]]:
        return self.q.wait(refs, timeout)

    def logs(self, ref: int | str, stream: str, tail: int | str | None = None) -> str:
        return self.q.logs(ref, stream, tail)

    def close(self) -> None:
        self.store.close()


def spec_of(job: dict[str, Any]) -> Any:
    """An API job body (a dict) -> :class:`JobSpec`, checked as ``metasched submit`` checks its options."""
    from metasched.runtime.metaqueue.arrays import parse_after
    from metasched.runtime.metaqueue.workflow import submit_spec

    job = dict(job)
    known = {"command", "name", "after", "cpus", "mem", "time", "env", "cwd", "licences", "max_attempts"}
    known |= {"deadline", "user_class", "params", "tasks", "nodes"}
    unknown = sorted(set(job) - known)
    if unknown:
        raise Error(f"unknown job field(s): {', '.join(unknown)}")
    command = job.pop("command", None)
    if isinstance(command, list | tuple):
        command = shlex.join(str(c) for c in command)
    if not isinstance(command, str) or not command.strip():
        raise Error("command: a non-empty command line or argv list is needed")
    env = job.pop("env", None) or {}
    cwd = job.pop("cwd", None) or ""
    refs, kinds = parse_after(job.pop("after", None) or [])
    spec = submit_spec(command, cwd, after=refs or None, **job)
    spec.after_kinds = kinds
    spec.env = {str(k): str(v) for k, v in env.items()}
    return spec


class _Http(_Backend):
    """``metasched server``'s user API (``/v1/jobs``)."""

    def __init__(self, url: str, token: str) -> None:
        import httpx

        self.http = httpx.Client(
            base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {token}"}, timeout=httpx.Timeout(90.0)
        )

    def _call(self, method: str, path: str, *, raw: bool = False, **kw: Any) -> Any:
        import httpx

        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise Error(f"cannot reach the server {self.http.base_url}: {exc}") from None
        if r.status_code >= 400:
            try:
                err = r.json()["error"]
                message = err["message"]
            except Exception:
                message = r.text[:300] or r.reason_phrase
            if r.status_code == 404:
                raise NotFound(message)
            raise Error(f"{message} (HTTP {r.status_code})")
        if raw:
            return r
        return r.text if r.headers.get("content-type", "").startswith("text/plain") else r.json()

    def submit(self, body: dict[str, Any]) -> list[int]:
        return list(self._call("POST", "/v1/jobs", json=body)["ids"])

    def jobs(self, **filters: Any) -> list[dict[str, Any]]:
        params = {
            "state": filters.get("states") or [],
            "owner": filters.get("owners") or [],
            "id": filters.get("ids") or [],
        }
        if filters.get("name"):
            params["name"] = filters["name"]
        return list(self._call("GET", "/v1/jobs", params=params)["jobs"])

    def job(self, ref: int | str, history: bool) -> dict[str, Any]:
        return dict(self._call("GET", f"/v1/jobs/{ref}"))

    def cancel(self, refs: Sequence[int | str]) -> list[int]:
        return list(self._call("POST", "/v1/jobs/cancel", json={"jobs": [str(r) for r in refs]})["cancelled"])

    def retry(self, refs: Sequence[int | str]) -> list[int]:
        return list(self._call("POST", "/v1/jobs/retry", json={"jobs": [str(r) for r in refs]})["requeued"])

    def wait(self, refs: Sequence[int | str], timeout: float) -> list[dict[str, Any]]:
        body = {"jobs": [str(r) for r in refs], "timeout": timeout}
        return list(self._call("POST", "/v1/jobs/wait", json=body)["jobs"])

    def logs(self, ref: int | str, stream: str, tail: int | str | None = None) -> str:
        from metasched.runtime.remote.logs import LogText

        params = {"stream": stream} if tail is None else {"stream": stream, "tail": str(tail)}
        r = self._call("GET", f"/v1/jobs/{ref}/logs", params=params, raw=True)
        text = r.text
        size = r.headers.get("x-log-size")
        return LogText(
            text,
            size=int(size) if size and size.isdigit() else len(text.encode()),
            truncated=r.headers.get("x-log-truncated") == "true",
            where=r.headers.get("x-log-where", ""),
        )

    def close(self) -> None:
        self.http.close()
