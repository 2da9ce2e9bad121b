"""Placeholder throttles: how many placeholders to keep in a site's queue. Add a class here and to ``REGISTRY``."""

from metasched.policy.base import build_registry
from metasched.policy.throttle.base import Throttle
from metasched.policy.throttle.trellis import TrellisThrottle

REGISTRY: dict[str, type[Throttle]] = build_registry(TrellisThrottle)

__all__ = ["REGISTRY", "Throttle", "TrellisThrottle"]
