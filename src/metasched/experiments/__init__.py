"""The papers' experiments: one module per paper (its setup, runs, declared claims, figures and
summary) over one sweep runner (:mod:`metasched.experiments.runner`).

Import contract (``lint-imports``): this package imports ``sim``, ``report``, ``workload``,
``policy`` and ``model``, never ``runtime`` nor ``cli``; nothing but ``cli`` imports it. A sweep
runs on any :class:`concurrent.futures.Executor`: the runner's own local process pool by default,
Dask's through ``distributed``, and the metaqueue's, which lives on the ``runtime`` side
(:mod:`metasched.runtime.sweep_executor`) and is handed to the runner by the CLI, so the two
drivers still never import each other.
"""

from __future__ import annotations

import os
from pathlib import Path


def shared_dir(override: Path | None = None) -> Path:
    """Where the papers' data are: ``override`` (a ``--shared`` option), else ``$METASCHED_SHARED``, else
    ``<repository root>/../shared``."""
    if override is not None:
        return override
    env = os.environ.get("METASCHED_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3].parent / "shared"
