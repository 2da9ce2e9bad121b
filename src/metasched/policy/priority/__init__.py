"""Queue orders (priorities) for local schedulers. Add a class here and to ``REGISTRY``."""

from metasched.policy.base import QueueOrder, build_registry
from metasched.policy.priority.efficacy import Efficacy
from metasched.policy.priority.fcfs import Fcfs

REGISTRY: dict[str, type[QueueOrder]] = build_registry(Fcfs, Efficacy)

__all__ = ["REGISTRY", "Efficacy", "Fcfs"]

# --- two-level scheduler of seed 004 (issue 5): MS heuristics, LS heuristics, cluster orders
from metasched.policy.meta.two_level_base import ClusterOrder, LsHeuristic, MsHeuristic  # noqa: E402
from metasched.policy.priority.aging import Aging  # noqa: E402
from metasched.policy.priority.arrival import ArrivalOrder  # noqa: E402
from metasched.policy.priority.deadline import LsDeadline  # noqa: E402
from metasched.policy.priority.licenses import LsLicences  # noqa: E402
from metasched.policy.priority.ms_deadline import MsDeadline  # noqa: E402
from metasched.policy.priority.ms_licenses import MsLicences  # noqa: E402
from metasched.policy.priority.ms_priority import MsPriorityOrder  # noqa: E402
from metasched.policy.priority.user_class import UserClassPriority  # noqa: E402
from metasched.policy.priority.wait_min import WaitMinimization  # noqa: E402
from metasched.policy.priority.weighted import WeightedHeuristics  # noqa: E402

MS_HEURISTICS: dict[str, type[MsHeuristic]] = build_registry(MsDeadline, MsLicences, UserClassPriority)
LS_HEURISTICS: dict[str, type[LsHeuristic]] = build_registry(Aging, LsDeadline, LsLicences, WaitMinimization)
CLUSTER_ORDERS: dict[str, type[ClusterOrder]] = build_registry(ArrivalOrder, MsPriorityOrder, WeightedHeuristics)
