"""``metasched licences``: global licence limits, copies active at once across ALL sites.

A site's own limits are its ``licences`` in ``sites.toml``; the global ones live in the metaqueue
(``licences`` table) and are set here or by the top-level ``[licences]`` table of ``sites.toml``
(applied when ``metasched sites run`` starts). How the two combine:
:func:`metasched.model.licence.free_copies` (docs/licences.md).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from metasched.cli.main import app
from metasched.runtime.metaqueue.records import StoreError

licences_app = typer.Typer(help="Global licence limits (copies active at once across all sites).", no_args_is_help=True)
app.add_typer(licences_app, name="licences")
DbOpt = Annotated[str | None, typer.Option("--db", help="Database URL (sqlite:///PATH or postgresql://...).")]


def _store(db: str | None):  # type: ignore[no-untyped-def]
    from metasched.runtime.metaqueue.store import Store

    return Store.open(db)


@licences_app.command("set")
def licences_set(
    name: Annotated[str, typer.Argument(help="Licence name (as jobs request it with --licence).")],
    copies: Annotated[int, typer.Argument(help="Copies that may be active at once across all sites.")],
    db: DbOpt = None,
) -> None:
    """Set a global limit: at most COPIES jobs' worth of NAME held at once, counted over every site."""
    store = _store(db)
    try:
        store.set_licence(name, copies)
    except StoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"licence {name}: {copies} copies across all sites")


@licences_app.command("unset")
def licences_unset(name: Annotated[str, typer.Argument(help="Licence name.")], db: DbOpt = None) -> None:
    """Remove a global limit (the sites' own limits still apply)."""
    store = _store(db)
    if name not in store.licences():
        typer.echo(f"error: no global limit for licence {name!r}", err=True)
        raise typer.Exit(2)
    store.set_licence(name, None)
    typer.echo(f"licence {name}: no global limit")


@licences_app.command("list")
def licences_list(db: DbOpt = None) -> None:
    """Every licence: its global limit, copies held now, and per site held / site limit."""
    usage = _store(db).licence_usage()
    if not usage:
        typer.echo("no licences: none configured and none requested by running jobs")
        return
    table = Table(title="licences (held = copies held by running jobs)")
    for col in ("licence", "global limit", "held", "per site: held / site limit"):
        table.add_column(col)
    for u in usage:
        sites = " ".join(f"{s}={n}/{'-' if cap is None else cap}" for s, (n, cap) in u["sites"].items())
        table.add_row(u["name"], "-" if u["copies"] is None else str(u["copies"]), str(u["held"]), sites)
    Console().print(table)
