"""Meta-schedulers: which site(s) get a job. One contract (:class:`MetaPolicy`, ``base.py``), one
registry (:data:`POLICIES`, ``registry.py``): add a class here and an entry there."""

from metasched.policy.meta.base import Allocation, CopySites, Dispatch, MachineSelector, MetaPolicy, StartNow
from metasched.policy.meta.best_fit import BestFit
from metasched.policy.meta.cancel_slower_only import CancelSlowerOnly
from metasched.policy.meta.completion_time import CompletionTime
from metasched.policy.meta.k_reservations import KReservations
from metasched.policy.meta.least_load import LeastLoad
from metasched.policy.meta.multisite import MultiSite
from metasched.policy.meta.registry import POLICIES, family_registry
from metasched.policy.meta.reservations_base import CopyOffer, MetaScheduler, MetaSiteView, StartDecision
from metasched.policy.meta.two_level import LoadOrdering
from metasched.policy.meta.two_level_base import TwoLevelDispatcher

#: The ``reservations`` family of :data:`POLICIES` by class key (seed 000: copies at several sites).
REGISTRY: dict[str, type[MetaScheduler]] = family_registry("reservations")

#: The ``selector`` family of :data:`POLICIES` by class key (seed 001: where a job starts now).
SELECTOR_REGISTRY: dict[str, type[MachineSelector]] = family_registry("selector")

#: The ``two-level`` family of :data:`POLICIES` by class key (seed 004's dispatcher).
TWO_LEVEL_REGISTRY: dict[str, type[TwoLevelDispatcher]] = family_registry("two-level")

__all__ = [
    "POLICIES",
    "REGISTRY",
    "SELECTOR_REGISTRY",
    "TWO_LEVEL_REGISTRY",
    "Allocation",
    "BestFit",
    "CancelSlowerOnly",
    "CompletionTime",
    "CopyOffer",
    "CopySites",
    "Dispatch",
    "KReservations",
    "LeastLoad",
    "LoadOrdering",
    "MachineSelector",
    "MetaPolicy",
    "MetaScheduler",
    "MetaSiteView",
    "MultiSite",
    "StartDecision",
    "StartNow",
    "TwoLevelDispatcher",
]
