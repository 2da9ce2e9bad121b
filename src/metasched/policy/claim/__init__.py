"""Claim policies: which ready metaqueue jobs a placeholder gets. Add a class here and to ``REGISTRY``."""

from metasched.policy.base import build_registry
from metasched.policy.claim.base import ClaimPolicy, FreeResources, fits
from metasched.policy.claim.fcfs import FcfsClaim

REGISTRY: dict[str, type[ClaimPolicy]] = build_registry(FcfsClaim)

__all__ = ["REGISTRY", "ClaimPolicy", "FcfsClaim", "FreeResources", "fits"]
