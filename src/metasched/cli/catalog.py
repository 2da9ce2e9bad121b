"""``metasched platforms`` and ``metasched policies``: what ``simulate --platform`` / ``--policy`` accept."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from metasched.cli.main import app

console = Console()


@app.command()
def platforms(
    schema: Annotated[bool, typer.Option(help="print the JSON Schema of sites.toml instead")] = False,
    show: Annotated[str | None, typer.Option(help="print the description file of this platform")] = None,
) -> None:
    """List the preset platforms (the papers' grids), or print one, or the sites.toml schema."""
    from metasched.model.platform import PlatformError
    from metasched.model.platform_file import json_schema, load_preset, preset_names, preset_path

    if schema:
        typer.echo(json.dumps(json_schema(), indent=2))
        return
    if show is not None:
        try:
            typer.echo(preset_path(show).read_text(), nl=False)
        except PlatformError as exc:
            typer.echo(f"error: {exc.message}, at --show", err=True)
            raise typer.Exit(2) from None
        return
    table = Table(title="preset platforms (simulate --platform NAME)")
    for col in ("name", "sites", "processors", "kinds", "description", "source"):
        table.add_column(col)
    for name in preset_names():
        p = load_preset(name)
        sites = ", ".join(f"{s.name}:{s.procs}" for s in p.sites)
        table.add_row(name, sites, str(p.total_procs), ", ".join(p.kinds), p.description, p.source)
    console.print(table)


@app.command()
def policies() -> None:
    """List the meta-policies (name, family, parameters, live claim policy, source) and the live claim policies."""
    from metasched.policy.meta.registry import describe_policies

    table = Table(title="meta-policies (simulate --policy NAME[:key=value,...])")
    for col in ("name", "family", "parameters", "live", "what", "source"):
        table.add_column(col)
    for row in describe_policies():
        table.add_row(row["name"], row["family"], row["parameters"], row["live"], row["summary"], row["source"])
    console.print(table)
    from metasched.policy.claim import REGISTRY as CLAIMS

    live = Table(
        title="live claim policies (metasched sites run / serve --policy NAME; a meta-policy's name works too)"
    )
    live.add_column("name")
    live.add_column("what")
    for key, cls in CLAIMS.items():
        live.add_row(key, (cls.__doc__ or "").strip().splitlines()[0])
    console.print(live)
