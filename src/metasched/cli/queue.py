"""User commands of the live metaqueue: submit, submit-workflow, status, show, wait, cancel, retry, logs.

A thin layer over the Python API (:class:`metasched.Client`): on the database directly (``--db URL``,
default ``$METASCHED_DB`` or the embedded SQLite file in ``$METASCHED_HOME``), so a small setup needs no
server; or through ``metasched server`` (``--server URL`` or ``$METASCHED_SERVER``, with the user's token in
``$METASCHED_TOKEN`` or the file ``$METASCHED_TOKEN_FILE``).
"""

from __future__ import annotations

import json
import os
import shlex
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from metasched.cli.main import app
from metasched.runtime.metaqueue.records import StoreError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from metasched.client import Client
    from metasched.runtime.metaqueue.store import Store

_console: Console | None = None


def _out() -> Console:
    """Rich's console, made on first use: ``submit`` and ``wait`` print plain lines and do not import Rich."""
    global _console
    if _console is None:
        from rich.console import Console

        _console = Console()
    return _console


DbOpt = Annotated[str | None, typer.Option("--db", help="Database URL (sqlite:///PATH or postgresql://...).")]
ServerOpt = Annotated[
    str | None,
    typer.Option("--server", envvar="METASCHED_SERVER", help="metasched server URL (token: $METASCHED_TOKEN)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (for scripts) instead of text.")]

STATE_STYLE = {
    "queued": "yellow",
    "running": "cyan",
    "done": "green",
    "failed": "red",
    "cancelled": "magenta",
    "dep_failed": "red",
}
#: ``metasched wait``'s exit status when the jobs had not all ended by ``--timeout`` (as timeout(1)).
EXIT_TIMEOUT = 124


def _open(db: str | None) -> Store:
    from metasched.runtime.metaqueue.store import Store

    try:
        return Store.open(db)
    except StoreError as exc:
        raise _fail(str(exc)) from None


def _client(db: str | None, server: str | None) -> Client:
    from metasched.client import Client

    if db and server:
        raise _fail("give --db or --server, not both")
    try:
        return Client(server, db=db) if server else Client(db=db)
    except StoreError as exc:
        raise _fail(str(exc)) from None


def _fail(msg: str) -> typer.Exit:
    typer.echo(f"error: {' '.join(msg.split())}", err=True)
    return typer.Exit(2)


def _json(data: Any) -> None:
    # Compact: json's C encoder (an indent makes it the pure-Python one, ~10x slower on 10,000 jobs).
    typer.echo(json.dumps(data, default=str))


@app.command(context_settings={"allow_interspersed_args": False})
def submit(
    command: Annotated[list[str], typer.Argument(help="The command line (after --).")],
    name: Annotated[str | None, typer.Option(help="Job name (unique, not all digits), for --after and status.")] = None,
    after: Annotated[
        str,
        typer.Option(
            help="Jobs this one waits for, comma-separated names or ids (afterok), or as sbatch --dependency: "
            "afterok:A[:B], afterany:A, afternotok:A."
        ),
    ] = "",
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
    array: Annotated[
        str | None,
        typer.Option(
            help="An array, as sbatch --array: 1-100[:step][%max_running] or 1,5,9; the index is in "
            "$METASCHED_ARRAY_INDEX and replaces {index} in the command."
        ),
    ] = None,
    each_line: Annotated[
        Path | None,
        typer.Option(
            help="One job per line of FILE: the line replaces {line} and is in $METASCHED_ARRAY_LINE, "
            "its number (from 1) in $METASCHED_ARRAY_INDEX."
        ),
    ] = None,
    parsable: Annotated[bool, typer.Option("--parsable", help="Print only the job id(s), one per line.")] = False,
    as_json: JsonOpt = False,
    db: DbOpt = None,
    server: ServerOpt = None,
) -> None:
    """Add one job: metasched submit [--name N] [--after A,B] [--cpus C] [--mem M] [--licence L] [--time T] -- CMD..."""
    from metasched.client import Job, spec_of

    job: dict[str, Any] = {
        "command": command[0] if len(command) == 1 else shlex.join(command),
        "name": name,
        "after": [a.strip() for a in after.split(",") if a.strip()] or None,
        "cpus": cpus,
        "tasks": tasks,
        "nodes": nodes,
        "mem": mem,
        "licences": licence or None,
        "time": time_,
        "deadline": deadline,
        "user_class": user_class,
        "params": param or None,
        "max_attempts": max_attempts,
        "cwd": os.getcwd(),
    }
    job = {k: v for k, v in job.items() if v is not None}
    lines = None
    try:
        spec_of(job)  # every option checked here, naming it, before any database or server is touched
        if array is not None and each_line is not None:
            raise StoreError("give --array or --each-line, not both")
        if array is not None:
            from metasched.runtime.metaqueue.arrays import parse_array

            parse_array(array)
        if each_line is not None:
            lines = _lines(each_line)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    client = _client(db, server)
    body: dict[str, Any] = {"jobs": [job]}
    if array is not None:
        body["array"] = array
    if lines is not None:
        body["lines"] = lines
    try:
        ids = client._backend.submit(body)
        jobs: list[Job] = client._fetch(ids) if as_json else []
    except StoreError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _json([j._data for j in jobs])
    elif parsable or (array is None and lines is None):
        typer.echo("\n".join(map(str, ids)))
    else:
        typer.echo(f"submitted an array of {len(ids)} jobs: {ids[0]}..{ids[-1]}")


def _lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StoreError(f"cannot read --each-line {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise StoreError(f"--each-line {path}: not UTF-8 text") from None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise StoreError(f"--each-line {path}: no line (blank lines are skipped)")
    return lines


@app.command("workflow-schema")
def workflow_schema() -> None:
    """Print the JSON Schema of a workflow file (also shipped as metasched/runtime/metaqueue/workflow.schema.json)."""
    import json

    from metasched.runtime.metaqueue.workflow_model import workflow_json_schema

    typer.echo(json.dumps(workflow_json_schema(), indent=2))


@app.command("submit-workflow")
def submit_workflow(
    file: Annotated[Path, typer.Argument(help="YAML list of jobs, or Trellis '-deps \"A B\" -l L -c CMD' lines.")],
    as_json: JsonOpt = False,
    db: DbOpt = None,
    server: ServerOpt = None,
) -> None:
    """Add a workflow (all or nothing): unknown dependencies and cycles are refused, naming them."""
    try:
        from metasched.runtime.metaqueue.workflow import read_workflow

        # Read once (refused here, naming the file's line, before connecting; a pipe is read only once).
        specs = read_workflow(file, default_cwd=os.getcwd())
        client = _client(db, server)
        jobs = client.submit_workflow(specs)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _json([j._data for j in jobs])
    else:
        _out().print(f"submitted {len(jobs)} jobs ({jobs[0].id}..{jobs[-1].id})" if jobs else "empty workflow")


def _fmt_t(t: float | None) -> str:
    return datetime.fromtimestamp(t).strftime("%H:%M:%S") if t else ""


def _fmt_s(seconds: float | None) -> str:
    if not seconds:
        return ""
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    d, h = divmod(h, 24)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def _rows(
    client: Client, refs: list[str], states: list[str], site: str | None, name: str | None, owners: list[str]
) -> list[dict[str, Any]]:
    ids: list[int] = []
    if refs:
        found = [client.job(r) for r in refs]
        ids = [j.id for j in found]
    return client._backend.jobs(states=states, name=name, owners=owners, ids=ids, site=site)


def _table(rows: list[dict[str, Any]], limit: int, down: dict[str, str]) -> Table:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["state"]] = counts.get(r["state"], 0) + 1
    # ready: queued with every dependency met (what a placeholder could claim now)
    counts["ready"] = sum(1 for r in rows if r["state"] == "queued" and not r["reason"].startswith("waiting on"))
    summary = "  ".join(f"{k}={v}" for k, v in sorted(counts.items()))
    from rich.table import Table

    table = Table(title=f"metaqueue  {summary}", title_justify="left")
    owners = len({r["owner"] for r in rows}) > 1
    cols = ["id", "name", *(["owner"] if owners else []), "state", "cpus", "time", "site", "attempts", "exit"]
    for col in (*cols, "submitted", "started", "ended", "reason"):
        table.add_column(col, overflow="fold")
    if down:
        table.caption = "\n".join(f"site {n} is DOWN: {why}" for n, why in sorted(down.items()))
        table.caption_justify = "left"
    if limit and len(rows) > limit:
        rows = rows[-limit:]
    for r in rows:
        st = r["state"]
        table.add_row(
            str(r["id"]),
            r["name"] or "",
            *([r["owner"]] if owners else []),
            f"[{STATE_STYLE.get(st, '')}]{st}[/]",
            str(r["cpus"]),
            _fmt_s(r["time_s"]),
            (r["site"] or "") + (" [red](down)[/]" if r["site"] in down else ""),
            str(r["attempts"]),
            "" if r["exit_code"] is None else str(r["exit_code"]),
            _fmt_t(r["submit_at"]),
            _fmt_t(r["start_at"]),
            _fmt_t(r["end_at"]),
            r["reason"] or "",
        )
    return table


def _down_sites(client: Client) -> dict[str, str]:
    """Sites the site manager marked down, with since when and why (``metasched sites run`` records it)."""
    store = getattr(client._backend, "store", None)
    if store is None:  # through a server: the REASON column says "site down"
        return {}
    out = {}
    for s in store.sites():
        reach = (s["config"] or {}).get("reach") or {}
        if reach.get("state") == "down":
            since = f"since {_fmt_t(reach['since'])}: " if reach.get("since") else ""
            out[s["name"]] = since + str(reach.get("error") or "unreachable").splitlines()[0]
    return out


@app.command()
def status(
    jobs: Annotated[list[str] | None, typer.Argument(help="Only these jobs (names or ids).")] = None,
    state: Annotated[
        list[str] | None,
        typer.Option(
            help="Only jobs in this state (repeatable): queued, running, done, failed, cancelled, dep_failed."
        ),
    ] = None,
    site: Annotated[str | None, typer.Option(help="Only jobs that ran at this site.")] = None,
    name: Annotated[str | None, typer.Option(help="Only names matching this pattern (* wildcard).")] = None,
    owner: Annotated[list[str] | None, typer.Option(help="Only this user's jobs (repeatable; admin).")] = None,
    limit: Annotated[int, typer.Option(help="Show at most the last N jobs (0 = all; --json: all).")] = 50,
    watch: Annotated[bool, typer.Option("--watch", help="Refresh every --interval seconds until Ctrl-C.")] = False,
    interval: Annotated[float, typer.Option(help="Refresh interval for --watch.")] = 2.0,
    as_json: JsonOpt = False,
    db: DbOpt = None,
    server: ServerOpt = None,
) -> None:
    """Table of jobs with filters and a REASON column (as squeue); --watch keeps it live."""
    from metasched.runtime.metaqueue.userops import check_states

    try:
        check_states(state or [])
    except StoreError as exc:
        raise _fail(f"--state: {exc}") from None
    client = _client(db, server)
    args = (client, list(jobs or []), list(state or []), site, name, list(owner or []))
    try:
        rows = _rows(*args)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _json(rows)
        return
    if not watch:
        _out().print(_table(rows, limit, _down_sites(client)))
        return
    from rich.live import Live

    with Live(_table(rows, limit, _down_sites(client)), console=_out(), refresh_per_second=4) as live:
        try:
            while True:
                time.sleep(interval)
                live.update(_table(_rows(*args), limit, _down_sites(client)))
        except KeyboardInterrupt:
            pass


@app.command()
def show(
    job: Annotated[str, typer.Argument(help="Job name or id.")],
    as_json: JsonOpt = False,
    db: DbOpt = None,
    server: ServerOpt = None,
) -> None:
    """Everything about one job: command, resources, state and reason, dependencies, history."""
    client = _client(db, server)
    try:
        info = client.job(job).info()
    except StoreError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _json(info)
        return
    for key in ("id", "name", "owner", "state", "reason", "exit_code", "command", "cwd", "cpus", "mem_mb"):
        typer.echo(f"{key + ':':<11}{'' if info.get(key) is None else info[key]}")
    typer.echo(f"{'time:':<11}{_fmt_s(info['time_s']) or '-'}")
    if info.get("licences"):
        typer.echo(f"{'licences:':<11}{', '.join(f'{k}:{v}' for k, v in info['licences'].items())}")
    typer.echo(f"{'after:':<11}{', '.join(map(str, info.get('after') or [])) or '-'}")
    typer.echo(f"{'site:':<11}{info.get('site') or '-'}  attempts: {info['attempts']}")
    typer.echo("history:")
    for e in info.get("history", []):
        where = e.get("site") or e.get("placeholder") or ""
        typer.echo(f"  {_fmt_t(e['at'])} {e['kind']:<14} {where:<24} {e['detail']}")


def worst_exit(rows: list[dict[str, Any]]) -> int:
    """``metasched wait``'s exit status: 0 when every job is done, else the worst job's: a failed job's exit
    code (128 + N when killed by signal N), 1 for a job cancelled or never run (dependency failed)."""
    worst = 0
    for r in rows:
        if r["state"] == "failed":
            code = r["exit_code"] if r["exit_code"] is not None else 1
            worst = max(worst, 128 - code if code < 0 else code or 1)
        elif r["state"] in ("cancelled", "dep_failed"):
            worst = max(worst, 1)
    return worst


@app.command()
def wait(
    jobs: Annotated[list[str], typer.Argument(help="Job names or ids.")],
    timeout: Annotated[
        float | None, typer.Option(help=f"Give up after this many seconds (exit status {EXIT_TIMEOUT}).")
    ] = None,
    as_json: JsonOpt = False,
    db: DbOpt = None,
    server: ServerOpt = None,
) -> None:
    """Wait until the jobs end; the exit status is the worst job's (0: all done; a failed job's exit code; 1:
    cancelled or never ran)."""
    client = _client(db, server)
    try:
        wanted = [client.job(j) for j in jobs]
        done = client.wait(wanted, timeout=timeout)
    except TimeoutError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_TIMEOUT) from None
    except StoreError as exc:
        raise _fail(str(exc)) from None
    rows = [j._data for j in done]
    if as_json:
        _json(rows)
    else:
        for r in rows:
            code = "" if r["exit_code"] is None else f" exit {r['exit_code']}"
            why = f" ({r['reason']})" if r["reason"] and r["state"] != "done" else ""
            typer.echo(f"{r['id']} {r['name'] or ''} {r['state']}{code}{why}".replace("  ", " "))
    raise typer.Exit(worst_exit(rows))


@app.command()
def cancel(
    jobs: Annotated[list[str], typer.Argument(help="Job names or ids.")], db: DbOpt = None, server: ServerOpt = None
) -> None:
    """Cancel queued or running jobs; their dependents become 'dependency failed'."""
    client = _client(db, server)
    try:
        done = client._backend.cancel(jobs)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    _out().print(f"cancelled {len(done)} job(s): {', '.join(map(str, done))}")


@app.command()
def retry(
    jobs: Annotated[list[str], typer.Argument(help="Job names or ids.")], db: DbOpt = None, server: ServerOpt = None
) -> None:
    """Queue failed, cancelled or dependency-failed jobs again (and the dependents they held back)."""
    client = _client(db, server)
    try:
        done = client._backend.retry(jobs)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    _out().print(f"requeued {len(done)} job(s): {', '.join(map(str, done))}")


@app.command()
def logs(
    job: Annotated[str, typer.Argument(help="Job name or id.")],
    stderr: Annotated[bool, typer.Option("--stderr", help="Show stderr instead of stdout.")] = False,
    stdout: Annotated[bool, typer.Option("--stdout", help="Show stdout even when empty.")] = False,
    tail: Annotated[
        str | None,
        typer.Option("--tail", help="Only the end: N lines, or Nc bytes (Nk, NM: KiB, MiB).", metavar="N"),
    ] = None,
    events: Annotated[bool, typer.Option("--events", help="Show the job's event log.")] = False,
    db: DbOpt = None,
    server: ServerOpt = None,
) -> None:
    """Print a job's output (last run: stdout, or stderr when that is all it wrote) or its event log.

    A job that ran on a remote site is read there over the site's SSH connection. At most 16 MiB (the
    end of the file) is shown; a note on stderr says when the output is cut."""
    client = _client(db, server)
    try:
        if events:
            for e in client.job(job).info()["history"]:
                where = e.get("placeholder") or ""
                typer.echo(f"{_fmt_t(e['at'])} {e['kind']:<14} {where:<24} {e['detail']}")
            return
        text = client._backend.logs(job, "stderr" if stderr else "stdout" if stdout else "auto", tail)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    typer.echo(text, nl=False)
    note = getattr(text, "note", None)
    if note:
        typer.echo(f"note: {note}", err=True)
