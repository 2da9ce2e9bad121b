"""Queue orders (priorities) for local schedulers. Add a class here and to ``REGISTRY``."""

from metasched.policy.base import QueueOrder, build_registry
from metasched.policy.priority.efficacy import Efficacy
from metasched.policy.priority.fcfs import Fcfs

REGISTRY: dict[str, type[QueueOrder]] = build_registry(Fcfs, Efficacy)

__all__ = ["REGISTRY", "Efficacy", "Fcfs"]
