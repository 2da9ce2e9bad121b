"""User commands of the live metaqueue: submit, submit-workflow, status, cancel, retry, logs.

They work directly on the database (``--db URL``, default ``$METASCHED_DB`` or the embedded SQLite
file in ``$METASCHED_HOME``), so a small setup needs no server.
"""

from __future__ import annotations

import os
import shlex
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from metasched.cli.main import app
from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.workflow import read_workflow, submit_spec

if TYPE_CHECKING:
    from metasched.runtime.metaqueue.store import Store

console = Console()
DbOpt = Annotated[str | None, typer.Option("--db", help="Database URL (sqlite:///PATH or postgresql://...).")]

STATE_STYLE = {
    "queued": "yellow",
    "running": "cyan",
    "done": "green",
    "failed": "red",
    "cancelled": "magenta",
    "dep_failed": "red",
}


def _open(db: str | None) -> Store:
    from metasched.runtime.metaqueue.store import Store

    try:
        return Store.open(db)
    except StoreError as exc:
        raise _fail(str(exc)) from None


def _fail(msg: str) -> typer.Exit:
    typer.echo(f"error: {' '.join(msg.split())}", err=True)
    return typer.Exit(2)


@app.command(context_settings={"allow_interspersed_args": False})
def submit(
    command: Annotated[list[str], typer.Argument(help="The command line (after --).")],
    name: Annotated[str | None, typer.Option(help="Job name (unique, not all digits), for --after and status.")] = None,
    after: Annotated[str, typer.Option(help="Comma-separated names or ids this job waits for.")] = "",
    cpus: Annotated[int, typer.Option(help="CPUs the job needs (per task with --tasks).")] = 1,
    tasks: Annotated[int, typer.Option(help="MPI ranks, started by the site's launcher (srun, mpirun).")] = 1,
    nodes: Annotated[int, typer.Option(help="Nodes the tasks are spread over.")] = 1,
    mem: Annotated[str, typer.Option(help="Memory, e.g. 512M or 4G.")] = "0",
    licence: Annotated[list[str] | None, typer.Option(help="Licence NAME[:COUNT] (repeatable).")] = None,
    time_: Annotated[
        str, typer.Option("--time", help="Wall-time estimate as sbatch --time: minutes, MM:SS, HH:MM:SS, D-HH:MM:SS.")
    ] = "0",
    deadline: Annotated[
        str | None, typer.Option(help="Wanted done within this long of submission (pasquali policy).")
    ] = None,
    user_class: Annotated[str, typer.Option(help="gold, silver or regular (pasquali policy).")] = "regular",
    param: Annotated[
        list[str] | None, typer.Option(help="NAME=NUMBER for the run-time formula of the job's kind (repeatable).")
    ] = None,
    max_attempts: Annotated[int, typer.Option(help="Runs allowed when placeholders vanish.")] = 3,
    db: DbOpt = None,
) -> None:
    """Add one job: metasched submit [--name N] [--after A,B] [--cpus C] [--mem M] [--licence L] [--time T] -- CMD..."""
    try:
        # One typed description with the workflow file's entries: the same checks, errors naming the option.
        spec = submit_spec(
            command[0] if len(command) == 1 else shlex.join(command),
            os.getcwd(),
            name=name,
            after=[a.strip() for a in after.split(",") if a.strip()],
            cpus=cpus,
            tasks=tasks,
            nodes=nodes,
            mem=mem,
            licences=licence or [],
            time=time_,
            deadline=deadline,
            user_class=user_class,
            params=param or [],
            max_attempts=max_attempts,
        )
    except StoreError as exc:
        raise _fail(str(exc)) from None
    store = _open(db)
    try:
        (job_id,) = store.submit([spec])
    except StoreError as exc:
        raise _fail(str(exc)) from None
    typer.echo(job_id)


@app.command("workflow-schema")
def workflow_schema() -> None:
    """Print the JSON Schema of a workflow file (also shipped as metasched/runtime/metaqueue/workflow.schema.json)."""
    import json

    from metasched.runtime.metaqueue.workflow_model import workflow_json_schema

    typer.echo(json.dumps(workflow_json_schema(), indent=2))


@app.command("submit-workflow")
def submit_workflow(
    file: Annotated[Path, typer.Argument(help="YAML list of jobs, or Trellis '-deps \"A B\" -l L -c CMD' lines.")],
    db: DbOpt = None,
) -> None:
    """Add a workflow (all or nothing): unknown dependencies and cycles are refused, naming them."""
    store = _open(db)
    try:
        specs = read_workflow(file, default_cwd=os.getcwd())
        ids = store.submit(specs)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    console.print(f"submitted {len(ids)} jobs ({ids[0]}..{ids[-1]})" if ids else "empty workflow")


def _fmt_t(t: float | None) -> str:
    return datetime.fromtimestamp(t).strftime("%H:%M:%S") if t else ""


def _table(store: Store, states: list[str], site: str | None, name: str | None, limit: int) -> Table:
    counts = store.counts()
    summary = "  ".join(f"{k}={v}" for k, v in sorted(counts.items()))
    table = Table(title=f"metaqueue  {summary}", title_justify="left")
    for col in ("id", "name", "state", "cpus", "site", "attempts", "exit", "submitted", "started", "ended", "reason"):
        table.add_column(col, overflow="fold")
    down = _down_sites(store)
    if down:
        table.caption = "\n".join(f"site {n} is DOWN: {why}" for n, why in sorted(down.items()))
        table.caption_justify = "left"
    rows: list[dict[str, Any]] = store.jobs(states=states, site=site, name_like=name)
    if limit and len(rows) > limit:
        rows = rows[-limit:]
    for r in rows:
        st = r["state"]
        table.add_row(
            str(r["id"]),
            r["name"] or "",
            f"[{STATE_STYLE.get(st, '')}]{st}[/]",
            str(r["cpus"]),
            (r["site"] or "") + (" [red](down)[/]" if r["site"] in down else ""),
            str(r["attempts"]),
            "" if r["exit_code"] is None else str(r["exit_code"]),
            _fmt_t(r["submit_at"]),
            _fmt_t(r["start_at"]),
            _fmt_t(r["end_at"]),
            r["reason"] or "",
        )
    return table


def _down_sites(store: Store) -> dict[str, str]:
    """Sites the site manager marked down, with since when and why (``metasched sites run`` records it)."""
    out = {}
    for s in store.sites():
        reach = (s["config"] or {}).get("reach") or {}
        if reach.get("state") == "down":
            since = f"since {_fmt_t(reach['since'])}: " if reach.get("since") else ""
            out[s["name"]] = since + str(reach.get("error") or "unreachable").splitlines()[0]
    return out


@app.command()
def status(
    state: Annotated[list[str] | None, typer.Option(help="Only jobs in this state (repeatable).")] = None,
    site: Annotated[str | None, typer.Option(help="Only jobs that ran at this site.")] = None,
    name: Annotated[str | None, typer.Option(help="Only names matching this pattern (* wildcard).")] = None,
    limit: Annotated[int, typer.Option(help="Show at most the last N jobs (0 = all).")] = 50,
    watch: Annotated[bool, typer.Option("--watch", help="Refresh every --interval seconds until Ctrl-C.")] = False,
    interval: Annotated[float, typer.Option(help="Refresh interval for --watch.")] = 2.0,
    db: DbOpt = None,
) -> None:
    """Table of jobs with filters; --watch keeps it live."""
    store = _open(db)
    states = state or []
    if not watch:
        console.print(_table(store, states, site, name, limit))
        return
    with Live(_table(store, states, site, name, limit), console=console, refresh_per_second=4) as live:
        try:
            while True:
                time.sleep(interval)
                live.update(_table(store, states, site, name, limit))
        except KeyboardInterrupt:
            pass


@app.command()
def cancel(jobs: Annotated[list[str], typer.Argument(help="Job names or ids.")], db: DbOpt = None) -> None:
    """Cancel queued or running jobs; their dependents become 'dependency failed'."""
    store = _open(db)
    try:
        done = store.cancel(jobs)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    console.print(f"cancelled {len(done)} job(s): {', '.join(map(str, done))}")


@app.command()
def retry(jobs: Annotated[list[str], typer.Argument(help="Job names or ids.")], db: DbOpt = None) -> None:
    """Queue failed, cancelled or dependency-failed jobs again (and the dependents they held back)."""
    store = _open(db)
    try:
        done = store.retry(jobs)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    console.print(f"requeued {len(done)} job(s): {', '.join(map(str, done))}")


@app.command()
def logs(
    job: Annotated[str, typer.Argument(help="Job name or id.")],
    stderr: Annotated[bool, typer.Option("--stderr", help="Show stderr instead of stdout.")] = False,
    events: Annotated[bool, typer.Option("--events", help="Show the job's event log.")] = False,
    db: DbOpt = None,
) -> None:
    """Print a job's output (last run) or its event log."""
    store = _open(db)
    try:
        row = store.job(job)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    if events:
        for e in store.events(job_id=row["id"]):
            typer.echo(f"{_fmt_t(e['at'])} {e['kind']:<14} {e['placeholder_id'] or '':<24} {e['detail']}")
        return
    path = row["stderr_path"] if stderr else row["stdout_path"]
    if not path:
        raise _fail(f"job {job} is {row['state']}: no output recorded yet")
    try:
        typer.echo(Path(path).read_text(), nl=False)
    except OSError as exc:
        raise _fail(f"cannot read {path}: {exc.strerror} (the output stays on the site that ran the job)") from None
