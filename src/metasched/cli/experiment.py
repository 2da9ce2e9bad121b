"""``metasched experiment NAME``: the papers' experiments, one module each, imported only when its experiment runs.

A new experiment is one line in :data:`EXPERIMENTS` (name -> module, one-line help) plus its module, which
registers itself on :data:`app` (``@app.command("NAME")``); a test fails when they disagree.
"""

from __future__ import annotations

import typer

from metasched.cli.main import LazyGroup

EXPERIMENTS: dict[str, tuple[str | tuple[str, ...], str]] = {
    "ernemann2002": (
        "metasched.cli.exp_ernemann2002",
        "Local processing vs job sharing vs multi-site co-allocation (Ernemann et al. 2002).",
    ),
    "smartnet1998": (
        "metasched.cli.exp_mapping",
        "SmartNet (seed 002): OLB and MET against SmartNet on the production and academic models, and noise.",
    ),
    "braun2001": (
        "metasched.cli.exp_mapping",
        "Braun et al. (2001): every mapper on the 12 512 x 16 instances (makespan, time, ratio to the LP bound).",
    ),
    "pasquali2010": (
        "metasched.cli.exp_pasquali2010",
        "Pasquali et al. 2010: MS heuristics vs LS heuristics vs FCFS+EASY on a 4-cluster grid.",
    ),
    "sabin2003": (
        "metasched.cli.exp_sabin2003",
        "Heterogeneous multi-site schemes of Sabin et al. 2003 over load factors, figures 1-14.",
    ),
}


class _ExperimentGroup(LazyGroup):
    lazy = EXPERIMENTS


app = typer.Typer(
    help="Reproduce and extend the papers' experiments (CSV + PNG + summary).",
    no_args_is_help=True,
    cls=_ExperimentGroup,
)
_ExperimentGroup.typer_app = app


@app.callback()
def _experiments() -> None:
    # A callback keeps ``app`` a group before any experiment module is loaded.
    pass
