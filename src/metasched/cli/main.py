"""The ``metasched`` command. Each command group lives in its own module of this package."""

from __future__ import annotations

import typer

from metasched import __version__
from metasched.cli.experiment import app as experiment_app

app = typer.Typer(
    name="metasched",
    help="Metascheduler for batch jobs across heterogeneous sites: simulate policies on traces, run them live.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(experiment_app, name="experiment")


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


# Command modules register themselves on ``app`` when imported (one line each).
from metasched.cli import live as _live  # noqa: E402,F401
from metasched.cli import queue as _queue  # noqa: E402,F401
from metasched.cli import simulate as _simulate  # noqa: E402,F401


def main() -> None:
    app()


from metasched.cli import trace as _trace  # noqa: E402

app.add_typer(_trace.app, name="trace")
from metasched.cli import demo as _demo  # noqa: E402,F401
from metasched.cli import formula as _formula  # noqa: E402,F401
from metasched.cli import licences as _licences  # noqa: E402,F401
from metasched.cli import remote as _remote  # noqa: E402,F401
from metasched.cli import replay as _replay  # noqa: E402,F401
