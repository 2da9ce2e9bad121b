"""Meta-schedulers: which site(s) get a job."""

# --- two-level scheduler of seed 004 (issue 5)
from metasched.policy.base import build_registry
from metasched.policy.meta.two_level import LoadOrdering
from metasched.policy.meta.two_level_base import TwoLevelDispatcher

TWO_LEVEL_REGISTRY: dict[str, type[TwoLevelDispatcher]] = build_registry(LoadOrdering)

__all__ = ["TWO_LEVEL_REGISTRY", "LoadOrdering"]
