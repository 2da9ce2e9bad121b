"""The papers' experiments: one module per paper (its setup, runs, declared claims, figures and
summary) over one sweep runner (:mod:`metasched.experiments.runner`).

Import contract (``lint-imports``): this package imports ``sim``, ``report``, ``workload``,
``policy`` and ``model``, never ``runtime`` nor ``cli``; nothing but ``cli`` imports it. A sweep
runs on any :class:`concurrent.futures.Executor`: the runner's own local process pool by default,
Dask's through ``distributed``, and the metaqueue's, which lives on the ``runtime`` side
(:mod:`metasched.runtime.sweep_executor`) and is handed to the runner by the CLI, so the two
drivers still never import each other.
"""
