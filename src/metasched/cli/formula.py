"""``metasched formula``: the user's run-time formula of a job kind, from the job's parameters.

``metasched formula set sim "0.002 * n**2 + 5"`` (every site) or ``--site fast``; jobs carry
parameters with ``metasched submit --param n=1000`` or ``params: {n: 1000}`` in a workflow. Where a
formula can be evaluated it is preferred over the learned estimate (``metasched estimates`` shows
both, with their errors). Formulas are arithmetic only (:mod:`metasched.model.formula`).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from metasched.cli.main import app
from metasched.runtime.metaqueue.records import StoreError

formula_app = typer.Typer(
    help="Run-time formulas per job kind (seconds, from the jobs' --param).", no_args_is_help=True
)
app.add_typer(formula_app, name="formula")
DbOpt = Annotated[str | None, typer.Option("--db", help="Database URL (sqlite:///PATH or postgresql://...).")]
SiteOpt = Annotated[str, typer.Option("--site", help="Only at this site (default: every site).")]


def _store(db: str | None):  # type: ignore[no-untyped-def]
    from metasched.runtime.metaqueue.store import Store

    return Store.open(db)


@formula_app.command("set")
def formula_set(
    kind: Annotated[str, typer.Argument(help="Job kind: the name without its trailing number (sim-17 -> sim).")],
    expression: Annotated[str, typer.Argument(help='Seconds, e.g. "0.002 * n**2 + 5" (names: job parameters).')],
    site: SiteOpt = "",
    db: DbOpt = None,
) -> None:
    """Set the formula of KIND (at --site, or every site); refused with the reason if not plain arithmetic."""
    try:
        _store(db).set_formula(kind, expression, site=site)
    except StoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"formula {kind}@{site or '*'}: {expression}")


@formula_app.command("unset")
def formula_unset(kind: Annotated[str, typer.Argument(help="Job kind.")], site: SiteOpt = "", db: DbOpt = None) -> None:
    """Remove the formula of KIND (at --site, or the one for every site)."""
    store = _store(db)
    if not any(f["kind"] == kind and f["site"] == site for f in store.formulas()):
        typer.echo(f"error: no formula for {kind}@{site or '*'}", err=True)
        raise typer.Exit(2)
    store.set_formula(kind, None, site=site)
    typer.echo(f"formula {kind}@{site or '*'}: removed")


@formula_app.command("list")
def formula_list(db: DbOpt = None) -> None:
    """The formulas, with their mean relative error on the finished jobs that carried parameters."""
    rows = _store(db).formulas()
    if not rows:
        typer.echo("no formulas (metasched formula set KIND EXPR)")
        return
    Console().print(formula_table(rows))


def formula_table(rows: list[dict[str, object]]) -> Table:
    table = Table(title="run-time formulas (preferred over learned estimates where they evaluate)")
    for col in ("kind", "site", "formula (s)", "runs", "error (mean rel.)", "runs lacking a parameter"):
        table.add_column(col)
    for f in rows:
        err = f["error"]
        table.add_row(
            str(f["kind"]),
            str(f["site"] or "*"),
            str(f["expression"]),
            str(f["runs"]),
            "" if err is None else f"{100 * float(err):.1f}%",  # type: ignore[arg-type]
            str(f["missing"]),
        )
    return table
