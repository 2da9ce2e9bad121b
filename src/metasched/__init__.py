"""metasched: a metascheduler for batch jobs across heterogeneous sites.

One scheduling-policy core (:mod:`metasched.policy`, pure, no I/O) driven by two drivers:
the trace simulator (:mod:`metasched.sim`) and the live metaqueue (:mod:`metasched.runtime`).

For notebooks (:mod:`metasched.api`, loaded on first use so ``import metasched`` stays light)::

    import metasched
    result = metasched.simulate(metasched.read_swf("trace.swf"), metasched.Platform.from_toml("sites.toml"),
                                "completion-time:k=2")
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # (not imported at run time: ``import metasched`` is on every command's start-up path)
    from typing import Any

__version__ = "0.1.0"

_API = {
    "read_swf": "metasched.api",
    "simulate": "metasched.api",
    "compare": "metasched.api",
    "load_platform": "metasched.api",
    "Result": "metasched.api",
    "Platform": "metasched.model.platform",
    "SiteSpec": "metasched.model.platform",
    "Job": "metasched.model.job",
    # The metaqueue's Python API (issue 36); its jobs are metasched.client.Job.
    "Client": "metasched.client",
    "NotFound": "metasched.client",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'metasched' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
