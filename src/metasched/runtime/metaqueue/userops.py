"""What a user does with the metaqueue, as one identity over one :class:`Store` (issue 36).

The one implementation behind the Python :class:`metasched.Client` on the embedded database, the HTTP user
API of ``metasched server`` (``/v1/jobs``) and so the CLI: submit, list with filters and reasons, show one
job with its history, cancel, retry, wait, logs. A user (``admin=False``) sees and acts on their own jobs
only: another user's job is :class:`NotFound`, exactly as a job that does not exist.

Every answer is plain JSON-ready data (dicts of :data:`JOB_FIELDS`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from metasched.runtime.metaqueue.records import ADMIN, JobSpec, StoreError, dep_satisfied
from metasched.runtime.metaqueue.states import TERMINAL, JobState
from metasched.runtime.metaqueue.store import DEPS, JOBS, Store

#: The fields of a job in every answer (list, show, wait, submit --json).
JOB_FIELDS = (
    "id",
    "name",
    "owner",
    "state",
    "exit_code",
    "reason",
    "command",
    "cpus",
    "tasks",
    "nodes",
    "mem_mb",
    "time_s",
    "licences",
    "site",
    "attempts",
    "submit_at",
    "start_at",
    "end_at",
)
STATES = tuple(s.value for s in JobState)
#: Longest wait one call may block (the HTTP long poll answers by then; a client asks again).
MAX_WAIT_S = 60.0


def check_states(states: Sequence[str]) -> list[str]:
    """The states given, or a :class:`StoreError` naming the unknown one and the known ones."""
    bad = [s for s in states if s not in STATES]
    if bad:
        raise StoreError(f"unknown state {bad[0]!r}: one of {', '.join(STATES)}")
    return list(states)


class UserQueue:
    """The metaqueue as user ``owner`` sees it (``admin``: every user's jobs)."""

    def __init__(self, store: Store, owner: str = ADMIN, *, admin: bool = True) -> None:
        self.store = store
        self.owner = owner
        self.admin = admin

    # ------------------------------------------------------------------ changes

    def submit(self, specs: Sequence[JobSpec]) -> list[int]:
        """Add jobs (one, a workflow or an array) in one transaction; their ids in order."""
        return self.store.submit(specs, owner=self.owner, see_all=self.admin)

    def cancel(self, refs: Sequence[str]) -> list[int]:
        return self.store.cancel(refs, owner=self.owner, see_all=self.admin)

    def retry(self, refs: Sequence[str]) -> list[int]:
        return self.store.retry(refs, owner=self.owner, see_all=self.admin)

    # ------------------------------------------------------------------ queries

    def jobs(
        self,
        *,
        states: Sequence[str] = (),
        name: str | None = None,
        owners: Sequence[str] = (),
        ids: Sequence[int] = (),
        site: str | None = None,
    ) -> list[dict[str, Any]]:
        """Jobs in id order with their reasons; ``name`` may hold ``*`` wildcards. Unknown states and
        owners are refused (a user names only themself)."""
        check_states(states)
        if owners and not self.admin and set(owners) != {self.owner}:
            raise StoreError(f"you ({self.owner}) see only your own jobs: --owner {self.owner} or none")
        if owners and self.admin:
            known = {u["name"] for u in self.store.users()} | {ADMIN}
            unknown = sorted(set(owners) - known)
            if unknown:
                raise StoreError(f"unknown owner {unknown[0]!r}: one of {', '.join(sorted(known))}")
        rows = self.store.jobs(
            states=states,
            site=site,
            name_like=name,
            owners=owners if self.admin else [self.owner],
            ids=ids,
            columns=(*JOB_FIELDS, "pending_deps"),
        )
        explain(self.store, rows)
        for r in rows:
            del r["pending_deps"]
        return rows

    def job(self, ref: str | int, *, history: bool = True) -> dict[str, Any]:
        """One job by id or name, with ``after`` (its dependencies), its reason and (``history``) its events."""
        row = self.store.job(str(ref), owner=self.owner, see_all=self.admin)
        out = {k: row[k] for k in (*JOB_FIELDS, "pending_deps")}
        out["after"] = row["after"]
        out["cwd"] = row["cwd"]
        explain(self.store, [out])
        del out["pending_deps"]
        if history:
            out["history"] = [
                {
                    "at": e["at"],
                    "kind": e["kind"],
                    "site": e["site"],
                    "placeholder": e["placeholder_id"],
                    "detail": e["detail"],
                }
                for e in self.store.events(job_id=row["id"])
            ]
        return out

    def resolve(self, refs: Sequence[str | int]) -> list[int]:
        """Ids of the jobs named (names of this owner, ids of jobs this identity may see); NotFound otherwise."""
        with self.store.engine.connect() as conn:
            return self.store._refs(conn, [str(r) for r in refs], self.owner, self.admin)

    def wait(
        self, refs: Sequence[str | int], timeout_s: float | None = None, poll_s: float = 0.2
    ) -> list[dict[str, Any]]:
        """Block until every job named has ended (done, failed, cancelled, dependency failed) or ``timeout_s``
        passed; returns the jobs as they are then (check their ``state``)."""
        ids = self.resolve(refs)
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            rows = self.jobs(ids=ids)
            if all(r["state"] in TERMINAL for r in rows) or (end is not None and time.monotonic() >= end):
                return rows
            left = poll_s if end is None else max(0.0, min(poll_s, end - time.monotonic()))
            time.sleep(left)
            poll_s = min(poll_s * 1.5, 2.0)

    def logs(self, ref: str | int, stream: str = "stdout", tail: Any = None) -> str:
        """The job's output of its last run. ``stream`` is ``stdout`` or ``stderr``; ``auto``: stdout, or
        stderr when the job wrote nothing else (a failed job with only an error message). ``tail``: ``N``
        lines or ``Nc``/``Nk``/``NM`` bytes (a :class:`~metasched.runtime.remote.logs.Tail` too).

        A :class:`~metasched.runtime.remote.logs.LogText` (a ``str`` with ``size``, ``truncated`` and
        ``note``): at most ``MAX_LOG_BYTES``, the end of the file kept. A job that ran on a remote site is
        read there over SSH (the site's ``ssh`` table as ``metasched sites run`` recorded it);
        :class:`LogUnavailable` (a :class:`StoreError`) names the site and the path when that fails."""
        from metasched.runtime.remote.logs import LogUnavailable as Unreadable
        from metasched.runtime.remote.logs import RemoteReader, Tail, parse_tail, read_local

        if stream not in ("stdout", "stderr", "auto"):
            raise StoreError(f"unknown stream {stream!r}: stdout, stderr or auto")
        try:
            want = tail if isinstance(tail, Tail) else parse_tail(tail)
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        row = self.store.job(str(ref), owner=self.owner, see_all=self.admin)
        label = row["name"] or row["id"]
        paths = {"stdout": row["stdout_path"], "stderr": row["stderr_path"]}
        site = row["site"] or "?"
        config = next((s["config"] or {} for s in self.store.sites() if s["name"] == row["site"]), {})
        where = str(config.get("where") or "local")
        remote: RemoteReader | None = None
        if config.get("ssh"):
            try:
                remote = RemoteReader(site, config["ssh"])
            except Unreadable as exc:
                raise LogUnavailable(str(exc)) from None

        def read(name: str) -> str:
            path = paths[name]
            what = f"{name} of job {label}"
            if not path:
                raise StoreError(f"job {label} is {row['state']}: no output recorded yet ({name})")
            if remote is not None:
                try:
                    return remote.read(path, want, what)
                except Unreadable as exc:
                    raise LogUnavailable(str(exc)) from None
            text = read_local(path, want)
            if text is not None:
                return text
            if where != "local":
                raise LogUnavailable(
                    f"cannot read {path} ({what}): it is on site {site} ({where}), whose ssh connection is "
                    "not recorded; run `metasched sites run` again (this version records it)"
                )
            raise LogUnavailable(f"cannot read {path} ({what}) on this machine: no such file or not readable")

        try:
            if stream != "auto":
                return read(stream)
            if not paths["stdout"] and not paths["stderr"]:
                return read("stdout")  # the "no output recorded yet" answer
            texts: dict[str, str] = {}
            errors: dict[str, LogUnavailable] = {}
            for name in ("stdout", "stderr"):
                if paths[name]:
                    try:
                        texts[name] = read(name)
                    except LogUnavailable as exc:
                        errors[name] = exc
                if texts.get("stdout"):
                    return texts["stdout"]
            if texts.get("stderr"):
                return texts["stderr"]
            if texts:
                return texts.get("stdout", texts.get("stderr", ""))
            raise errors.get("stdout") or errors["stderr"]
        finally:
            if remote is not None:
                remote.close()


class LogUnavailable(StoreError):
    """A job's output could not be read: its site is unreachable, the read timed out, or the file is gone."""


def explain(store: Store, rows: list[dict[str, Any]]) -> None:
    """Fill the ``reason`` of queued jobs, as ``squeue``'s REASON column: waiting on which job, needs which
    licence, no site fits its cpus/mem/time, site down, or ready (waiting for a placeholder). Other states
    keep the reason the store recorded (``exit code 3``, ``dependency prep was cancelled``...)."""
    queued = [r for r in rows if r["state"] == JobState.QUEUED]
    if not queued:
        return
    # Only jobs with unmet dependencies need the dependency table (an array of 10,000 without: no query).
    ids = [r["id"] for r in queued if r.get("pending_deps", 1)]
    waiting: dict[int, list[str]] = {}
    with store.engine.connect() as conn:
        for i in range(0, len(ids), 500):
            q = (
                select(DEPS.c.job_id, JOBS.c.id, JOBS.c.name, JOBS.c.state, DEPS.c.kind)
                .join(JOBS, JOBS.c.id == DEPS.c.after_id)
                .where(DEPS.c.job_id.in_(ids[i : i + 500]))
                .order_by(DEPS.c.job_id, JOBS.c.id)
            )
            for jid, dep, name, state, kind in conn.execute(q):
                if dep_satisfied(kind, state):
                    continue
                waiting.setdefault(jid, []).append(f"{dep} ({name}, {state})" if name else f"{dep} ({state})")
    sites = store.sites()
    usage = {u["name"]: u for u in store.licence_usage()} if any(r["licences"] for r in queued) else {}
    for r in queued:
        deps = waiting.get(r["id"])
        if deps:
            more = f" and {len(deps) - 3} more" if len(deps) > 3 else ""
            r["reason"] = "waiting on job " + ", ".join(deps[:3]) + more
            continue
        r["reason"] = _resources_reason(r, sites, usage)


def _resources_reason(r: dict[str, Any], sites: list[dict[str, Any]], usage: dict[str, dict[str, Any]]) -> str:
    for lic, count in sorted((r["licences"] or {}).items()):
        u = usage.get(lic)
        if u is None or (u["copies"] is None and not any(cap is not None for _, cap in u["sites"].values())):
            return f"needs licence {lic}, which no site offers"
        caps = [cap for _, cap in u["sites"].values() if cap is not None]
        total = u["copies"] if u["copies"] is not None else sum(caps)
        if total - u["held"] < count:
            return f"needs licence {lic}: all {total} copies in use"
    if not sites:
        return "ready: waiting for a placeholder"
    needed = r["cpus"] * (r.get("tasks") or 1)
    fits: list[tuple[str, str]] = []
    too_small: list[tuple[str, str]] = []
    for s in sites:
        cfg = s["config"] or {}
        cpus, mem, wall = cfg.get("cpus"), cfg.get("mem_mb") or 0, cfg.get("wall_time_s")
        if cpus is not None:
            cpus *= cfg.get("nodes") or 1  # a placeholder holds cpus x nodes
        why = []
        if cpus is not None and cpus < needed:
            why.append(f"{cpus} cpus")
        if mem and mem < r["mem_mb"]:
            why.append(f"{mem} MB")
        if wall and r["time_s"] and wall < r["time_s"]:
            why.append(f"{wall:.0f} s")
        (too_small if why else fits).append((s["name"], ", ".join(why)))
    if not fits:
        largest = "; ".join(f"{n}: {w}" for n, w in too_small[:3])
        return f"no site fits its cpus/mem/time (needs {needed} cpus, {r['mem_mb']} MB, {r['time_s']:.0f} s; {largest})"
    down = [n for n, _ in fits if ((_site(sites, n)["config"] or {}).get("reach") or {}).get("state") == "down"]
    if len(down) == len(fits):
        return f"site down: {', '.join(down)}"
    return "ready: waiting for a placeholder"


def _site(sites: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(s for s in sites if s["name"] == name)
