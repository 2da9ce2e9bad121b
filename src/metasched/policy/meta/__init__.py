"""Meta-schedulers: which site(s) get a job, and which copy runs. Add a class here and to ``REGISTRY``."""

from metasched.policy.base import build_registry
from metasched.policy.meta.base import CopyOffer, MetaScheduler, MetaSiteView, StartDecision
from metasched.policy.meta.cancel_slower_only import CancelSlowerOnly
from metasched.policy.meta.completion_time import CompletionTime
from metasched.policy.meta.k_reservations import KReservations
from metasched.policy.meta.least_load import LeastLoad

REGISTRY: dict[str, type[MetaScheduler]] = build_registry(LeastLoad, KReservations, CompletionTime, CancelSlowerOnly)

__all__ = [
    "REGISTRY",
    "CancelSlowerOnly",
    "CompletionTime",
    "CopyOffer",
    "KReservations",
    "LeastLoad",
    "MetaScheduler",
    "MetaSiteView",
    "StartDecision",
]
