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
    """Cumulative distribution of job wait times, one line per scheduler."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, values in waits.items():
        data = np.sort(values[np.isfinite(values)])
        if data.size == 0:
            continue
        # log axis: a wait of 0 s is drawn at 1 s so that it stays on the figure
        ax.step(np.maximum(data, 1.0), np.arange(1, data.size + 1) / data.size, where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("wait time (s, log scale; 0 drawn at 1)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1)
    ax.grid(True, alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
