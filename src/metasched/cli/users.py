"""``metasched user add|list|remove``: the server's users and their tokens (issue 36).

They work on the database directly (``--db``, as ``metasched status``): whoever can open the database is
the operator. A token is printed once, by ``add``; only its SHA-256 is stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from metasched.cli.queue import DbOpt, _fail, _open, _out
from metasched.runtime.metaqueue.records import StoreError

app = typer.Typer(help="Users of the server and their tokens: add (prints the token once), list, remove.")


@app.command()
def add(
    name: Annotated[str, typer.Argument(help="The user's name (a letter, then letters, digits, '.', '_', '-').")],
    admin: Annotated[bool, typer.Option("--admin", help="An admin sees and acts on every user's jobs.")] = False,
    db: DbOpt = None,
) -> None:
    """Create a user and print their token ONCE (only its hash is kept: lost means remove and add again)."""
    store = _open(db)
    try:
        token = store.add_user(name, "admin" if admin else "user")
    except StoreError as exc:
        raise _fail(str(exc)) from None
    typer.echo(token)
    typer.echo(
        f"user {name} added ({'admin' if admin else 'user'}). The line above is their token, shown this once: "
        "hand it over privately (export METASCHED_TOKEN=... or a 0600 file for --token-file).",
        err=True,
    )


@app.command("list")
def list_users(db: DbOpt = None) -> None:
    """Users, their role, since when, and their jobs per state."""
    from rich.table import Table

    store = _open(db)
    table = Table("user", "role", "created", "jobs")
    for u in store.users():
        jobs = "  ".join(f"{k}={v}" for k, v in sorted(u["jobs"].items()))
        table.add_row(u["name"], u["role"], datetime.fromtimestamp(u["created_at"]).strftime("%Y-%m-%d %H:%M"), jobs)
    _out().print(table)


@app.command()
def remove(name: Annotated[str, typer.Argument(help="The user to remove.")], db: DbOpt = None) -> None:
    """Remove a user: their token stops working at once; their jobs stay (an admin still sees them)."""
    store = _open(db)
    try:
        store.remove_user(name)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"user {name} removed", err=True)
