"""Local (single-site) schedulers. Add a class here and to ``REGISTRY``."""

from metasched.policy.base import LocalScheduler, build_registry
from metasched.policy.local.conservative import ConservativeBackfill
from metasched.policy.local.easy import EasyBackfill
from metasched.policy.local.fcfs import FcfsScheduler

REGISTRY: dict[str, type[LocalScheduler]] = build_registry(FcfsScheduler, EasyBackfill, ConservativeBackfill)

__all__ = ["REGISTRY", "ConservativeBackfill", "EasyBackfill", "FcfsScheduler"]

# --- two-level scheduler of seed 004 (issue 5): machine-aware local schedulers
from metasched.policy.local.flexible import FlexibleBackfill  # noqa: E402
from metasched.policy.meta.two_level_base import MachineScheduler  # noqa: E402

MACHINE_REGISTRY: dict[str, type[MachineScheduler]] = build_registry(FlexibleBackfill)
