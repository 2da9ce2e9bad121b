"""Remote sites over SSH (issue 9): ``metasched sites check``, ``sites ssh-key`` and ``ssh-gateway``."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer

from metasched.cli.live import sites_app
from metasched.cli.main import app


@app.command(
    "ssh-gateway",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
def ssh_gateway(ctx: typer.Context) -> None:
    """Forced command of a placeholder key: relay one protocol request (SSH_ORIGINAL_COMMAND) to the server.

    Options: --url URL --token-file FILE [--site NAME] [--timeout S]. For speed, authorized_keys lines
    made by ``metasched sites ssh-key`` run the gateway file directly with ``python -I -S`` instead.
    """
    from metasched.runtime.remote.gateway import serve

    sys.exit(serve(list(ctx.args)))


@sites_app.command("ssh-key")
def sites_ssh_key(
    site: Annotated[str, typer.Option(help="The site whose placeholders will use this key.")],
    url: Annotated[str, typer.Option(help="The metaqueue server as seen from the metaqueue host.")] = (
        "http://127.0.0.1:8765"
    ),
    token_file: Annotated[Path | None, typer.Option(help="The server's token file (default: METASCHED_HOME).")] = None,
    key: Annotated[
        Path | None, typer.Option(help="Key to use or create (default: METASCHED_HOME/keys/<site>).")
    ] = None,
    from_host: Annotated[list[str] | None, typer.Option("--from", help="Only from these addresses.")] = None,
    python: Annotated[str, typer.Option(help="Python on the metaqueue host that runs the gateway.")] = sys.executable,
) -> None:
    """Make the placeholders' restricted key for SITE and print its authorized_keys line.

    Put the line in ~/.ssh/authorized_keys on the metaqueue host and the private key on the site
    (referenced as metaqueue_ssh.key in the site's configuration, with transport = "ssh").
    """
    from metasched.runtime.metaqueue.protocol import token_path
    from metasched.runtime.metaqueue.store import metasched_home
    from metasched.runtime.remote.keys import authorized_keys_line, gateway_command, generate_keypair

    key = key or metasched_home() / "keys" / site
    try:
        pub = generate_keypair(key, comment=f"metasched-placeholder-{site}")
        command = gateway_command(url=url, token_file=token_file or token_path(), site=site, python=python)
        line = authorized_keys_line(pub.read_text(), command, from_hosts=from_host or ())
    except (ValueError, OSError, RuntimeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"# private key: {key} (copy it to site {site}); add this line to the metaqueue host's", err=True)
    typer.echo("# ~/.ssh/authorized_keys:", err=True)
    typer.echo(line)


@sites_app.command("check")
def sites_check(
    config: Annotated[Path | None, typer.Option(help="Site TOML file (default: one local site).")] = None,
    site: Annotated[list[str] | None, typer.Option(help="Only these sites.")] = None,
    placeholder: Annotated[bool, typer.Option(help="Submit a test placeholder through each batch system.")] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the test placeholder.")] = 120.0,
) -> None:
    """Check each site: reachable, batch commands present, placeholder Python, a test placeholder runs."""
    from rich.console import Console
    from rich.table import Table

    from metasched.runtime.batch import REGISTRY, BatchAdapter, PlaceholderSpec
    from metasched.runtime.manager import load_sites
    from metasched.runtime.metaqueue.states import PlaceholderState
    from metasched.runtime.metaqueue.store import StoreError
    from metasched.runtime.remote.check import check_site
    from metasched.runtime.remote.runner import CommandRunner, LocalRunner
    from metasched.runtime.remote.ssh import SshRunner

    try:
        configs = [c for c in load_sites(config) if not site or c.name in site]
    except StoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    table = Table(title="site check")
    for col in ("site", "check", "ok", "detail"):
        table.add_column(col)
    all_ok = True
    for cfg in configs:
        runner: CommandRunner = SshRunner(cfg.ssh) if cfg.ssh is not None else LocalRunner()
        workdir = cfg.workdir or ("metasched-placeholders/" + cfg.name if cfg.is_remote else None)
        adapter: BatchAdapter = REGISTRY[cfg.adapter](
            queue=cfg.queue,
            workdir=workdir or Path(tempfile.gettempdir()) / "metasched-check",
            extra_args=cfg.extra_args,
            command_timeout_s=cfg.command_timeout_s,
            setup=cfg.setup,
            runner=runner,
        )

        def test_placeholder(adapter: BatchAdapter = adapter, name: str = cfg.name) -> tuple[bool, str]:
            spec = PlaceholderSpec(f"check-{name}-{int(time.time())}", ["sh", "-c", "echo metasched-check"], 1)
            t0 = time.monotonic()
            batch_id = adapter.submit(spec)
            while time.monotonic() - t0 < timeout:
                state = adapter.poll([batch_id])[batch_id]
                if state in (PlaceholderState.DONE, PlaceholderState.FAILED, PlaceholderState.CANCELLED):
                    return (
                        state == PlaceholderState.DONE,
                        f"batch id {batch_id}: {state} after {time.monotonic() - t0:.1f} s",
                    )
                time.sleep(1.0)
            adapter.cancel([batch_id])
            return False, f"batch id {batch_id}: not finished within {timeout:g} s (cancelled)"

        try:
            items = check_site(
                runner,
                cfg.adapter,
                workdir=str(workdir) if workdir else None,
                python=cfg.python if cfg.is_remote else None,
                test_placeholder=test_placeholder if placeholder else None,
            )
        finally:
            runner.close()
        for item in items:
            all_ok &= item.ok
            table.add_row(cfg.name, item.name, "[green]yes[/]" if item.ok else "[red]NO[/]", item.detail)
    Console().print(table)
    raise typer.Exit(0 if all_ok else 1)
