"""Figures of results (matplotlib, Agg backend: no screen needed)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, imported on first use: it costs about a second, which
    every CLI command (``metasched status``, a placeholder's start) would otherwise pay."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def wait_cdf(waits: Mapping[str, np.ndarray], path: Path, title: str = "") -> None:
    """Cumulative distribution of job wait times, one line per scheduler.

    Drawn in a fraction of a second whatever the number of jobs: on a bare Agg canvas (no
    ``pyplot``), fixed margins (no ``tight_layout``), each line through at most ~2,000 of its
    points (every distinct wait while there are fewer; else evenly spaced ranks plus the last, a
    difference far below a pixel)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for label, values in waits.items():
        data = np.sort(values[np.isfinite(values)])
        if data.size == 0:
            continue
        fraction = np.arange(1, data.size + 1) / data.size
        if data.size > 2000:
            keep = np.unique(np.append(np.linspace(0, data.size - 1, 2000).astype(np.int64), data.size - 1))
            data, fraction = data[keep], fraction[keep]
        # log axis: a wait of 0 s is drawn at 1 s so that it stays on the figure
        ax.step(np.maximum(data, 1.0), fraction, where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("wait time (s, log scale; 0 drawn at 1)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1)
    ax.grid(True, alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title, fontsize="medium")
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.12, top=0.92 if title else 0.97)
    fig.savefig(path, dpi=120)
