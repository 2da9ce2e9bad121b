"""``metasched experiment NAME``: the papers' experiments. Each registers itself on ``app``."""

from __future__ import annotations

import typer

app = typer.Typer(help="Reproduce and extend the papers' experiments (CSV + PNG + summary).", no_args_is_help=True)

# One import line per experiment module (each defines an ``@app.command``).
from metasched.cli import exp_ernemann2002 as _exp_ernemann2002  # noqa: E402,F401
from metasched.cli import exp_mapping as _exp_mapping  # noqa: E402,F401
from metasched.cli import exp_pasquali2010 as _exp_pasquali2010  # noqa: E402,F401
from metasched.cli import exp_sabin2003 as _exp_sabin2003  # noqa: E402,F401
