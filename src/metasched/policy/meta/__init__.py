"""Meta-schedulers: which site(s) get a job. Add a class here and to its registry."""

from metasched.policy.base import build_registry
from metasched.policy.meta.base import Allocation, MachineSelector
from metasched.policy.meta.best_fit import BestFit
from metasched.policy.meta.multisite import MultiSite

#: Machine selectors (seed 001): where a job starts now, on one machine or co-allocated.
SELECTOR_REGISTRY: dict[str, type[MachineSelector]] = build_registry(BestFit, MultiSite)

__all__ = ["SELECTOR_REGISTRY", "Allocation", "BestFit", "MachineSelector", "MultiSite"]
