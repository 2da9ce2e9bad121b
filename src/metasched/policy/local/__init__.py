"""Local (single-site) schedulers. Add a class here and to its family's registry.

``REGISTRY`` holds the schedulers of one pool of processors (:class:`LocalScheduler`);
``MACHINE_REGISTRY`` those of a cluster of machines where a job runs on one machine (seed 004).
"""

from metasched.policy.base import LocalScheduler, build_registry
from metasched.policy.local.conservative import ConservativeBackfill
from metasched.policy.local.easy import EasyBackfill
from metasched.policy.local.fcfs import FcfsScheduler
from metasched.policy.local.flexible import FlexibleBackfill
from metasched.policy.meta.two_level_base import MachineScheduler

REGISTRY: dict[str, type[LocalScheduler]] = build_registry(FcfsScheduler, EasyBackfill, ConservativeBackfill)

MACHINE_REGISTRY: dict[str, type[MachineScheduler]] = build_registry(FlexibleBackfill)

__all__ = [
    "MACHINE_REGISTRY",
    "REGISTRY",
    "ConservativeBackfill",
    "EasyBackfill",
    "FcfsScheduler",
    "FlexibleBackfill",
]
