"""Meta-schedulers: which site(s) get a job. Add a class here and to its family's registry."""

from metasched.policy.base import build_registry
from metasched.policy.meta.base import Allocation, MachineSelector
from metasched.policy.meta.best_fit import BestFit
from metasched.policy.meta.cancel_slower_only import CancelSlowerOnly
from metasched.policy.meta.completion_time import CompletionTime
from metasched.policy.meta.k_reservations import KReservations
from metasched.policy.meta.least_load import LeastLoad
from metasched.policy.meta.multisite import MultiSite
from metasched.policy.meta.reservations_base import CopyOffer, MetaScheduler, MetaSiteView, StartDecision
from metasched.policy.meta.two_level import LoadOrdering
from metasched.policy.meta.two_level_base import TwoLevelDispatcher

#: Multi-site meta-schedulers with copies at several sites (seed 000): site choice + start arbitration.
REGISTRY: dict[str, type[MetaScheduler]] = build_registry(LeastLoad, KReservations, CompletionTime, CancelSlowerOnly)

#: Machine selectors (seed 001): where a job starts now, on one machine or co-allocated.
SELECTOR_REGISTRY: dict[str, type[MachineSelector]] = build_registry(BestFit, MultiSite)

#: Meta-scheduler dispatchers of the two-level scheduler (seed 004).
TWO_LEVEL_REGISTRY: dict[str, type[TwoLevelDispatcher]] = build_registry(LoadOrdering)

__all__ = [
    "REGISTRY",
    "SELECTOR_REGISTRY",
    "TWO_LEVEL_REGISTRY",
    "Allocation",
    "BestFit",
    "CancelSlowerOnly",
    "CompletionTime",
    "CopyOffer",
    "KReservations",
    "LeastLoad",
    "LoadOrdering",
    "MachineSelector",
    "MetaScheduler",
    "MetaSiteView",
    "MultiSite",
    "StartDecision",
    "TwoLevelDispatcher",
]
