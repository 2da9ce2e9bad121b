"""Claim policies: which ready metaqueue jobs a placeholder gets. Add a class here and to ``REGISTRY``."""

from metasched.policy.base import build_registry
from metasched.policy.claim.base import (
    RANKING_WINDOW_JOBS,
    ClaimPolicy,
    ClaimWorld,
    FreeResources,
    SiteSlots,
    estimate_at,
    fits,
)
from metasched.policy.claim.completion_time import CompletionTimeClaim
from metasched.policy.claim.efficacy import EfficacyClaim
from metasched.policy.claim.fcfs import FcfsClaim
from metasched.policy.claim.min_min import MinMinClaim
from metasched.policy.claim.pasquali import PasqualiClaim

REGISTRY: dict[str, type[ClaimPolicy]] = build_registry(
    FcfsClaim, EfficacyClaim, CompletionTimeClaim, MinMinClaim, PasqualiClaim
)

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
]
