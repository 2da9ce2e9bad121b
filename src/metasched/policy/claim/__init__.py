"""Claim policies: which ready metaqueue jobs a placeholder gets. Add a class here and to ``REGISTRY``.

The policies that need the mapping heuristics or NumPy (min-min, Pasquali) and ``REGISTRY`` are imported on
first use (a module ``__getattr__``): the store imports this package, and ``metasched submit`` / ``status``
should not pay for them (issue 34).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from metasched.policy.claim.base import (
    RANKING_WINDOW_JOBS,
    ClaimPolicy,
    ClaimWorld,
    FreeResources,
    SiteSlots,
    estimate_at,
    fits,
    fits_shape,
)
from metasched.policy.claim.completion_time import CompletionTimeClaim
from metasched.policy.claim.efficacy import EfficacyClaim
from metasched.policy.claim.fcfs import FcfsClaim

if TYPE_CHECKING:
    from metasched.policy.claim.min_min import MinMinClaim
    from metasched.policy.claim.pasquali import PasqualiClaim

    REGISTRY: dict[str, type[ClaimPolicy]]

#: Names imported on first use: name -> module.
_LAZY = {"MinMinClaim": "metasched.policy.claim.min_min", "PasqualiClaim": "metasched.policy.claim.pasquali"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name == "REGISTRY":
        from metasched.policy.base import build_registry

        value = build_registry(
            FcfsClaim, EfficacyClaim, CompletionTimeClaim, __getattr__("MinMinClaim"), __getattr__("PasqualiClaim")
        )
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "RANKING_WINDOW_JOBS",
    "REGISTRY",
    "ClaimPolicy",
    "ClaimWorld",
    "CompletionTimeClaim",
    "EfficacyClaim",
    "FcfsClaim",
    "FreeResources",
    "MinMinClaim",
    "PasqualiClaim",
    "SiteSlots",
    "estimate_at",
    "fits",
    "fits_shape",
]
