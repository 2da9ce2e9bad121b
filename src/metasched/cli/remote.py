"""Remote sites over SSH: ``metasched ssh-gateway`` (the restricted key's forced command)."""

from __future__ import annotations

import sys

import typer

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
