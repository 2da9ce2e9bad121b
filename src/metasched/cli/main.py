"""The ``metasched`` command. Each command group lives in its own module of this package.

Commands are registered **by name** in :data:`COMMANDS` and their module is imported only when that
command runs: ``metasched --help``, ``submit`` or ``status`` never load the simulator, numba, matplotlib or
the papers' experiments (``tests/cli/test_imports.py`` keeps it so). A new command is one line here
(name -> module, one-line help, in the order ``--help`` lists them) plus its module, which registers itself
on :data:`app` (``@app.command()``) or is a ``module:attr`` Typer sub-app. A test fails when the line and
the module disagree.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

from metasched import __version__

#: name -> (where it lives, the one-line help ``--help`` shows). Where: modules that register the command
#: on :data:`app` when imported (a tuple when a group spans modules), or ``"module:attr"`` for a Typer sub-app.
COMMANDS: dict[str, tuple[str | tuple[str, ...], str]] = {
    "server": (
        "metasched.cli.live",
        "Serve the placeholder protocol over HTTP (OpenAPI at /docs) and the dashboard (at /dashboard).",
    ),
    "placeholder": (
        "metasched.cli.live",
        "What a batch job runs: pull jobs from the metaqueue and run them until EXIT or the wall time.",
    ),
    "estimates": (
        "metasched.cli.live",
        "Run-time estimates per (job kind, site), each with its source and error: the user's formulas "
        "(``metasched formula``, preferred for jobs carrying their parameters) and the estimates learned from "
        "past runs (leave-one-out error).",
    ),
    "submit": (
        "metasched.cli.queue",
        "Add one job: metasched submit [--name N] [--after A,B] [--cpus C] [--mem M] [--licence L] [--time T] "
        "-- CMD...",
    ),
    "submit-workflow": (
        "metasched.cli.queue",
        "Add a workflow (all or nothing): unknown dependencies and cycles are refused, naming them.",
    ),
    "workflow-schema": (
        "metasched.cli.queue",
        "Print the JSON Schema of a workflow file (also shipped as metasched/runtime/metaqueue/workflow.schema.json).",
    ),
    "status": (
        "metasched.cli.queue",
        "Table of jobs with filters and a REASON column (as squeue); --watch keeps it live.",
    ),
    "show": (
        "metasched.cli.queue",
        "Everything about one job: command, resources, state and reason, dependencies, history.",
    ),
    "wait": (
        "metasched.cli.queue",
        "Wait until the jobs end; the exit status is the worst job's (0: all done; a failed job's exit code; 1: "
        "cancelled or never ran).",
    ),
    "cancel": ("metasched.cli.queue", "Cancel queued or running jobs; their dependents become 'dependency failed'."),
    "retry": (
        "metasched.cli.queue",
        "Queue failed, cancelled or dependency-failed jobs again (and the dependents they held back).",
    ),
    "logs": (
        "metasched.cli.queue",
        "Print a job's output (last run: stdout, or stderr when that is all it wrote) or its event log.",
    ),
    "user": (
        "metasched.cli.users:app",
        "Users of the server and their tokens: add (prints the token once), list, remove.",
    ),
    "simulate": (
        ("metasched.cli.simulate", "metasched.cli.grid"),
        "Replay a workload through FCFS / EASY / conservative backfilling on one machine.",
    ),
    "demo": (
        "metasched.cli.demo",
        "Heterogeneous testbed on this machine: FCFS vs the efficacy / completion-time policies, live and simulated.",
    ),
    "ssh-gateway": (
        "metasched.cli.remote",
        "Forced command of a placeholder key: relay one protocol request (SSH_ORIGINAL_COMMAND) to the server.",
    ),
    "replay": (
        "metasched.cli.replay",
        "Simulate the metaqueue's real history under other claim policies and site sets; name the best.",
    ),
    "experiment": (
        "metasched.cli.experiment:app",
        "Reproduce and extend the papers' experiments (CSV + PNG + summary).",
    ),
    "sites": (("metasched.cli.live", "metasched.cli.remote"), "Sites and their placeholders."),
    "trace": ("metasched.cli.trace:app", "Inspect SWF workload traces."),
    "formula": ("metasched.cli.formula", "Run-time formulas per job kind (seconds, from the jobs' --param)."),
    "licences": ("metasched.cli.licences", "Global licence limits (copies active at once across all sites)."),
    "platforms": (
        "metasched.cli.catalog",
        "List the preset platforms (the papers' grids), or print one, or the sites.toml schema.",
    ),
    "policies": (
        "metasched.cli.catalog",
        "List the meta-policies (name, family, parameters, live claim policy, source) and the live claim policies.",
    ),
    "batsim": ("metasched.cli.batsim", "Convert SWF -> Batsim JSON (delay profiles) or Batsim JSON -> SWF."),
}


#: Top-level module -> the extra of ``pip install 'metasched[EXTRA]'`` that brings it (pyproject.toml).
EXTRAS: dict[str, str] = {
    "numba": "sim",
    "llvmlite": "sim",
    "matplotlib": "sim",
    "sortedcontainers": "sim",
    "fastapi": "server",
    "starlette": "server",
    "uvicorn": "server",
    "httptools": "server",
    "psycopg": "postgres",
    "scipy": "lp",
}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The extra that installs the module ``exc`` could not find, or None when it is not an extra's."""
    return EXTRAS.get((exc.name or "").partition(".")[0])


class LazyGroup(TyperGroup):
    """A Typer group whose commands in :attr:`lazy` are imported on first use.

    Listing (``--help``) shows each lazy command from its registry line without importing it;
    running one (or asking for its own ``--help``) imports its module(s) and builds the real command.
    """

    #: name -> (where, help), as :data:`COMMANDS`.
    lazy: ClassVar[dict[str, tuple[str | tuple[str, ...], str]]] = {}
    #: The Typer app the self-registering modules add their commands to.
    typer_app: ClassVar[typer.Typer | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        # The registry's order, whichever commands this process has loaded already (the command server
        # of metasched.cli.launch has loaded some): ``--help`` reads the same everywhere.
        names = super().list_commands(ctx)
        return [n for n in names if n not in self.lazy] + list(self.lazy)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self._listing and cmd_name in self.lazy:
            return TyperCommand(name=cmd_name, help=self.lazy[cmd_name][1])
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None or cmd_name not in self.lazy:
            return cmd
        cmd = self.load(cmd_name)
        self.add_command(cmd, cmd_name)
        return cmd

    def invoke(self, ctx: Any) -> Any:
        # A command whose optional dependency is not installed says which extra brings it, in one line.
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            extra = missing_extra(exc)
            if extra is None:
                raise
            command = " ".join(filter(None, [ctx.command_path, ctx.invoked_subcommand]))
            typer.echo(
                f"error: {command} needs the '{extra}' extra (module {exc.name} is not installed): "
                f"pip install 'metasched[{extra}]'",
                err=True,
            )
            raise typer.Exit(2) from None

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def load(self, name: str) -> Any:
        """Import command ``name``'s module(s) and return its click command."""
        assert self.typer_app is not None
        where = self.lazy[name][0]
        if isinstance(where, str) and ":" in where:
            module, attr = where.split(":")
            sub = getattr(importlib.import_module(module), attr)
            if all(g.typer_instance is not sub for g in self.typer_app.registered_groups):
                self.typer_app.add_typer(sub, name=name)
        else:
            for module in (where,) if isinstance(where, str) else where:
                importlib.import_module(module)
        built = typer.main.get_command(self.typer_app)
        cmd = built.commands.get(name) if isinstance(built, TyperGroup) else None
        if cmd is None:
            raise RuntimeError(f"{where} did not register the command {name!r} (see COMMANDS in {__name__})")
        return cmd


class _MainGroup(LazyGroup):
    lazy = COMMANDS


app = typer.Typer(
    name="metasched",
    help="Metascheduler for batch jobs across heterogeneous sites: simulate policies on traces, run them live.",
    no_args_is_help=True,
    # Typer's shell completion: metasched --install-completion (bash, zsh, fish, PowerShell).
    add_completion=True,
    cls=_MainGroup,
)
_MainGroup.typer_app = app


@app.callback()
def _root() -> None:
    # A callback makes ``app`` a group even before any lazy command is loaded (global options go here).
    pass


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def main() -> None:
    from metasched.cli.errors import run

    run(app)
