"""Live services: ``metasched server``, ``metasched placeholder`` and ``metasched sites run``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from metasched.cli.main import app

if TYPE_CHECKING:
    from metasched.policy.claim import ClaimPolicy
    from metasched.runtime.manager import SiteManager, Tally

sites_app = typer.Typer(help="Sites and their placeholders.", no_args_is_help=True)
app.add_typer(sites_app, name="sites")


PolicyOpt = Annotated[
    str,
    typer.Option(
        "--policy",
        envvar="METASCHED_POLICY",
        help="Claim policy: fcfs, efficacy, completion-time, min-min (see `metasched policies`).",
    ),
]


def claim_policy(key: str) -> ClaimPolicy:
    """The registered claim policy ``key``, or a usage error listing the known ones.

    ``fcfs`` (the default, what most placeholders run) is built without the registry: that imports NumPy and
    the meta-policies' table, a third of a placeholder's start-up (issue 34)."""
    from metasched.policy.claim import FcfsClaim

    if key == FcfsClaim.key:
        return FcfsClaim()
    from metasched.policy.base import lookup
    from metasched.policy.claim import REGISTRY
    from metasched.policy.meta.registry import live_claim_key

    try:
        return lookup(REGISTRY, live_claim_key(key), "claim policy")()
    except KeyError as exc:
        raise typer.BadParameter(str(exc.args[0])) from None


def _fail(msg: str) -> typer.Exit:
    typer.echo(f"error: {msg}", err=True)
    return typer.Exit(2)


def _logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )


@app.command()
def server(
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    db: Annotated[str | None, typer.Option(help="Database URL.")] = None,
    lease: Annotated[float, typer.Option(help="Lease (s) a placeholder keeps a job without heartbeat.")] = 60.0,
    token_file: Annotated[
        Path | None, typer.Option(help="The admin's bearer token file (created 0600 if absent).")
    ] = None,
    agent_token_file: Annotated[
        Path | None,
        typer.Option(
            help="The placeholders' site/agent token file (created 0600 if absent): with it, only this token "
            "claims and the admin's token only uses the user API. Without it, the one token does both."
        ),
    ] = None,
    policy: PolicyOpt = "fcfs",
    metrics: Annotated[
        bool,
        typer.Option("--metrics", help="Serve Prometheus metrics at /metrics (token or dashboard-token)."),
    ] = False,
    metrics_open: Annotated[
        bool, typer.Option("--metrics-open", help="With --metrics: no token for /metrics (loopback --host only).")
    ] = False,
    verbose: Annotated[bool, typer.Option("-v", "--verbose")] = False,
) -> None:
    """Serve the placeholder protocol over HTTP (OpenAPI at /docs) and the dashboard (at /dashboard)."""
    import uvicorn

    from metasched.runtime.metaqueue.protocol import ensure_token, token_path
    from metasched.runtime.metaqueue.secure import TokenError
    from metasched.runtime.metaqueue.service import create_app
    from metasched.runtime.metaqueue.store import Store, default_url

    _logging(verbose)
    if metrics_open and not metrics:
        raise _fail("--metrics-open needs --metrics")
    if metrics:
        try:
            from metasched.runtime.metaqueue.metrics import is_loopback
        except ImportError as exc:
            raise _fail(f"--metrics needs prometheus-client (pip install 'metasched[server]'): {exc}") from None
        if metrics_open and not is_loopback(host):
            raise _fail(
                f"--metrics-open serves /metrics without a token: only with a loopback --host, not {host!r} "
                "(give Prometheus the dashboard-token instead)"
            )
    try:  # (before the database: an unusable token must stop the server, never switch auth off)
        token = ensure_token(token_file)
        # A read-only token for the dashboard page, next to the main one (shareable: it opens no protocol call).
        dash_token = ensure_token((token_file or token_path()).with_name("dashboard-token"))
        agent_token = ensure_token(agent_token_file) if agent_token_file else None
    except TokenError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    store = Store.open(db, lease_s=lease, policy=claim_policy(policy))
    typer.echo(
        f"metaqueue server on http://{host}:{port} db={db or default_url()} token={token_file or 'default'}; "
        f"dashboard: http://{host}:{port}/dashboard (token: {token_file or token_path()} or its dashboard-token)",
        err=True,
    )
    uvicorn.run(
        create_app(
            store,
            token,
            dashboard_token=dash_token,
            metrics=metrics,
            metrics_open=metrics_open,
            agent_token=agent_token,
        ),
        host=host,
        port=port,
        log_level="info" if verbose else "warning",
        access_log=verbose,
    )


@app.command()
def placeholder(
    site: Annotated[str, typer.Option(help="Site this placeholder runs at.")],
    server_url: Annotated[str | None, typer.Option("--server", help="Metaqueue server URL.")] = None,
    db: Annotated[str | None, typer.Option(help="Talk to this database directly instead of a server.")] = None,
    placeholder_id: Annotated[str | None, typer.Option("--id", help="Placeholder id (default: host-pid-time).")] = None,
    cpus: Annotated[int, typer.Option(help="CPUs this placeholder holds (on each node).")] = 1,
    nodes: Annotated[int, typer.Option(min=1, help="Nodes this placeholder holds (one job at a time if > 1).")] = 1,
    launcher: Annotated[
        str | None,
        typer.Option(
            help="How parallel jobs start: a template with {tasks} {nodes} {cpus} {hostfile} (default mpirun)."
        ),
    ] = None,
    mem: Annotated[int, typer.Option(help="Memory (MB) this placeholder holds, 0 = unchecked.")] = 0,
    wall_time: Annotated[float | None, typer.Option(help="Wall time (s) of the batch job holding us.")] = None,
    lease: Annotated[float, typer.Option(help="Lease (s), as configured on the server.")] = 60.0,
    margin: Annotated[float, typer.Option(help="Seconds kept free before the wall time.")] = 5.0,
    token_file: Annotated[Path | None, typer.Option(help="Bearer token file.")] = None,
    log_dir: Annotated[Path | None, typer.Option(help="Where job stdout/stderr go.")] = None,
    idle_exit: Annotated[float | None, typer.Option(help="Leave after this long with nothing ready.")] = None,
    linger: Annotated[bool, typer.Option("--linger", help="Keep polling when the queue is empty.")] = False,
    linger_for: Annotated[
        str | None,
        typer.Option(
            "--linger-for",
            metavar="DURATION",
            help="When the queue is empty, stay this long (90, 60s, 10m), woken at once by new work, then leave.",
        ),
    ] = None,
    max_wait: Annotated[float, typer.Option(help="Longest pause (s) between claims when nothing is ready.")] = 1.0,
    prefetch: Annotated[
        int, typer.Option(help="Most jobs claimed ahead while jobs run (only for jobs shorter than 50 ms); 0: none.")
    ] = 32,
    policy: PolicyOpt = "fcfs",
    ssh: Annotated[
        str | None, typer.Option(help="Reach the metaqueue over SSH: [user@]host running the gateway (issue 9).")
    ] = None,
    ssh_port: Annotated[int | None, typer.Option(help="SSH port of the metaqueue host.")] = None,
    ssh_key: Annotated[Path | None, typer.Option(help="The placeholder's restricted private key.")] = None,
    ssh_known_hosts: Annotated[Path | None, typer.Option(help="known_hosts holding the metaqueue host's key.")] = None,
    ssh_config: Annotated[str | None, typer.Option(help="ssh -F file (default: the user's).")] = None,
    ssh_mode: Annotated[str, typer.Option(help="session | mux | plain (see metasched.runtime.remote.client).")] = (
        "session"
    ),
    verbose: Annotated[bool, typer.Option("-v", "--verbose")] = False,
) -> None:
    """What a batch job runs: pull jobs from the metaqueue and run them until EXIT or the wall time."""
    from metasched.runtime.metaqueue.protocol import HttpTransport, StoreTransport, Transport, read_token
    from metasched.runtime.placeholder.agent import Agent

    _logging(verbose)
    linger_for_s = 0.0
    if linger_for is not None:
        from metasched.runtime.metaqueue.records import StoreError
        from metasched.runtime.metaqueue.workflow import parse_duration_s

        try:
            linger_for_s = parse_duration_s(linger_for)
        except StoreError as exc:
            typer.echo(f"error: {exc}, --linger-for", err=True)
            raise typer.Exit(2) from None
        if linger:
            typer.echo("error: --linger (for ever) and --linger-for DURATION: give one, --linger-for", err=True)
            raise typer.Exit(2)
    transport: Transport
    if ssh:
        from metasched.runtime.remote.ssh import SshTarget
        from metasched.runtime.remote.transport import SshTransport

        user, _, host = ssh.rpartition("@")
        target = SshTarget(
            host=host,
            user=user or None,
            port=ssh_port,
            identity_file=ssh_key,
            known_hosts=ssh_known_hosts,
            host_key_policy="yes" if ssh_known_hosts else "accept-new",
            ssh_config=ssh_config,
        )
        transport = SshTransport(target, mode=ssh_mode)  # type: ignore[arg-type]
    elif server_url:
        from metasched.runtime.metaqueue.secure import TokenError

        try:
            transport = HttpTransport(server_url, read_token(token_file))
        except TokenError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
    else:
        from metasched.runtime.metaqueue.store import Store

        transport = StoreTransport(Store.open(db, lease_s=lease, policy=claim_policy(policy)))
    from metasched.runtime.placeholder.launcher import Launcher, LauncherError

    try:
        Launcher(launcher or "mpirun")
    except LauncherError as exc:
        typer.echo(f"error: {exc}, --launcher", err=True)
        raise typer.Exit(2) from None
    agent = Agent(
        transport,
        site=site,
        placeholder_id=placeholder_id,
        cpus=cpus,
        nodes=nodes,
        launcher=launcher,
        mem_mb=mem,
        wall_time_s=wall_time,
        lease_s=lease,
        margin_s=margin,
        log_dir=log_dir,
        idle_exit_s=idle_exit,
        linger=linger,
        linger_for_s=linger_for_s,
        max_wait_s=max_wait,
        prefetch=prefetch,
    )
    state = agent.run()
    transport.close()
    # Exit status 3 tells the local adapter "expired" (wall time used up), which is not a failure.
    sys.exit({"expired": 3, "failed": 1}.get(state, 0))


@sites_app.command("run")
def sites_run(
    config: Annotated[Path | None, typer.Option(help="Site TOML file (default: one local site).")] = None,
    db: Annotated[str | None, typer.Option(help="Database URL.")] = None,
    server_url: Annotated[str | None, typer.Option("--server", help="Placeholders talk to this server.")] = None,
    token_file: Annotated[Path | None, typer.Option(help="Token file handed to placeholders.")] = None,
    lease: Annotated[float, typer.Option(help="Lease (s).")] = 60.0,
    interval: Annotated[float, typer.Option(help="Seconds between rounds.")] = 1.0,
    until_idle: Annotated[
        bool,
        typer.Option(
            "--until-idle",
            help="Stop when no job is queued or running, or when the work left needs sites that are down.",
        ),
    ] = False,
    progress_every: Annotated[
        float,
        typer.Option(help="Seconds between progress lines on stderr when it is not a terminal (0: no progress)."),
    ] = 10.0,
    policy: PolicyOpt = "fcfs",
    verbose: Annotated[bool, typer.Option("-v", "--verbose")] = False,
) -> None:
    """Keep placeholders in each site's queue (Trellis throttling), resubmitting vanished ones.

    ``--policy`` is the claim policy of placeholders talking to the database directly (with
    ``--server``, the server's ``--policy`` decides). A site whose batch commands keep failing is
    retried with back-off and marked down with the reason (``metasched sites list``, ``status``, the
    dashboard); the others carry on. Ends with a summary of this run's jobs (done, failed, left, per
    site); the exit status is 1 when any of them failed or was left undone.
    """
    import os

    from metasched.policy.meta.registry import live_claim_key

    claim_policy(policy)
    os.environ["METASCHED_POLICY"] = live_claim_key(policy)  # a meta-policy's name reaches its live claim policy
    from metasched.runtime.manager import RunTally, SiteManager, load_licences, load_sites
    from metasched.runtime.metaqueue.store import Store, StoreError, default_url

    _logging(verbose)
    try:
        configs = load_sites(config)
        global_licences = load_licences(config)
        store = Store.open(db, lease_s=lease)
        for name, copies in global_licences.items():
            store.set_licence(name, copies)
    except StoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    url = db or default_url()
    try:
        manager = SiteManager(
            store,
            configs,
            db_url=url,
            server=server_url,
            token_file=str(token_file) if token_file else None,
            lease_s=lease,
        )
    except StoreError as exc:  # e.g. another manager holds one of these sites
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    import signal

    def _stop(sig: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(sig).name)

    signal.signal(signal.SIGTERM, _stop)
    tally = RunTally.start(store)
    progress = _Progress(progress_every)
    try:
        why = manager.run(interval_s=interval, until_idle=until_idle, on_round=progress)
    except KeyboardInterrupt as exc:
        why = f"stopped on {exc.args[0] if exc.args else 'SIGINT'}"
        logging.getLogger("metasched.sites").warning("%s: cancelling this manager's placeholders", why)
        manager.shutdown()
    finally:
        progress.close()
        manager.close()  # the SSH sites' master connections
    result = tally.count(store)
    _summary(manager, result, why)
    if not result.ok:
        raise typer.Exit(1)


class _Progress:
    """One line of progress on stderr: redrawn in place on a terminal, else a plain line every ``every_s``
    seconds when something changed (logs and CI keep a readable trace)."""

    def __init__(self, every_s: float) -> None:
        import time

        from rich.console import Console
        from rich.live import Live

        self.console = Console(stderr=True)
        self.every_s = every_s
        self.clock = time.monotonic
        self.last_at = -float("inf")
        self.last_text = ""
        self.live: Live | None = None
        if self.console.is_terminal and every_s > 0:
            self.live = Live(console=self.console, transient=True, auto_refresh=False)
            self.live.start()

    def __call__(self, manager: SiteManager) -> None:
        if self.every_s <= 0:
            return
        counts = manager.store.counts()
        jobs = ", ".join(f"{k} {counts.get(k, 0)}" for k in ("done", "running", "queued", "failed", "dep_failed"))
        sites = ", ".join(f"{name} {h['state']}" for name, h in manager.health().items())
        text = f"sites run: jobs {jobs} | sites {sites}"
        if self.live is not None:
            from rich.text import Text

            self.live.update(Text(text), refresh=True)
        elif text != self.last_text and self.clock() - self.last_at >= self.every_s:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)
            self.last_at, self.last_text = self.clock(), text

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


def _summary(manager: SiteManager, result: Tally, why: str) -> None:
    """What the run did: why it stopped, its jobs by outcome, and per site the outcomes and whether it is up."""
    from datetime import datetime

    typer.echo(f"sites run: {why}")
    typer.echo(f"jobs of this run: {result.line()}")
    health = manager.health()
    for name in sorted({*health, *result.by_site}):
        per = result.by_site.get(name, {})
        h = health.get(name)
        if h is None:
            where = "(no site: never started)" if name == "-" else "(not managed by this run)"
        elif h["state"] == "down":
            since = datetime.fromtimestamp(h["down_since"]).strftime("%H:%M:%S")
            where = f"DOWN since {since}: {str(h['last_error']).splitlines()[0][:200]}"
        else:
            where = "up"
        outcomes = " ".join(f"{k} {per[k]}" for k in ("done", "failed", "left", "cancelled") if per.get(k))
        typer.echo(f"  {name:<16} {outcomes or 'no jobs':<28} {where}")
    if not result.ok:
        t = result.total
        typer.echo(
            f"error: {t.get('failed', 0)} job(s) failed and {t.get('left', 0)} left undone "
            "(metasched status --state failed shows them)",
            err=True,
        )


@sites_app.command("list")
def sites_list(db: Annotated[str | None, typer.Option(help="Database URL.")] = None) -> None:
    """Sites and their placeholders (target, active, per state)."""
    from rich.console import Console
    from rich.table import Table

    from metasched.runtime.metaqueue.store import Store

    store = Store.open(db)
    table = Table(title="sites")
    for col in ("site", "adapter", "where", "reach", "target", "active", "placeholders by state", "throttle decisions"):
        table.add_column(col)
    for s in store.sites():
        phs = store.placeholders(s["name"])
        by: dict[str, int] = {}
        dec: dict[str, int] = {}
        for p in phs:
            by[p["state"]] = by.get(p["state"], 0) + 1
            if p["decision"]:
                dec[p["decision"]] = dec.get(p["decision"], 0) + 1
        active = sum(by.get(k, 0) for k in ("submitted", "queued", "running"))
        config = s["config"] or {}
        reach = config.get("reach") or {}
        reach_text = str(reach.get("state", "?"))
        if reach.get("error"):
            reach_text += f": {reach['error'][:80]}"
        table.add_row(
            s["name"],
            s["adapter"],
            str(config.get("where", "local")),
            reach_text,
            str(s["target"]),
            str(active),
            " ".join(f"{k}={v}" for k, v in sorted(by.items())),
            " ".join(f"{k}={v}" for k, v in sorted(dec.items())),
        )
    Console().print(table)


@app.command()
def estimates(
    db: Annotated[str | None, typer.Option(help="Database URL.")] = None,
    site: Annotated[list[str] | None, typer.Option(help="Also show borrowed estimates for these sites.")] = None,
) -> None:
    """Run-time estimates per (job kind, site), each with its source and error: the user's formulas
    (``metasched formula``, preferred for jobs carrying their parameters) and the estimates learned from
    past runs (leave-one-out error)."""
    from rich.console import Console
    from rich.table import Table

    from metasched.cli.formula import formula_table
    from metasched.runtime.metaqueue.store import Store

    store = Store.open(db)
    est = store.estimates()
    formulas = store.formulas()
    with_formula = {(f["kind"], f["site"]) for f in formulas}
    sites = sorted({*(site or []), *(s["name"] for s in store.sites())})
    table = Table(title=f"run-time estimates learned from {len(est)} runs")
    for col in ("kind", "site", "runs", "estimate", "error (mean rel., leave-one-out)", "source"):
        table.add_column(col, justify="right" if col in ("runs", "estimate") else "left")
    for r in est.table(sites):
        err = "" if r.error is None else f"{100 * r.error:.1f}%"
        source = "borrowed" if r.borrowed else "runs"
        if (r.kind, r.site) in with_formula or (r.kind, "") in with_formula:
            source += "+formula"
        table.add_row(r.kind, r.site, str(r.runs), f"{r.estimate_s:.1f} s", err, source)
    if formulas:
        Console().print(formula_table(formulas))
    if not table.rows:
        typer.echo("no finished runs yet: nothing learned")
        return
    Console().print(table)
    if formulas:
        typer.echo("source: runs = learned here, borrowed = learned at another site and scaled; +formula = the")
        typer.echo("formula above is used instead for jobs carrying the parameters it names")
