"""Mappers: independent tasks onto heterogeneous machines from an ETC matrix. Add a class here and to ``REGISTRY``."""

from metasched.policy.base import build_registry
from metasched.policy.mapping.annealing import SimulatedAnnealing
from metasched.policy.mapping.base import DagScheduler, Mapper, SearchMapper, SearchOutcome
from metasched.policy.mapping.clustering import Clustering
from metasched.policy.mapping.duplex import Duplex
from metasched.policy.mapping.generational import Generational
from metasched.policy.mapping.genetic import GeneticAlgorithm
from metasched.policy.mapping.local_search import IteratedLocalSearch
from metasched.policy.mapping.lp_rounding import LpRounding
from metasched.policy.mapping.max_min import MaxMin
from metasched.policy.mapping.mct import Mct
from metasched.policy.mapping.met import Met
from metasched.policy.mapping.min_min import MinMin
from metasched.policy.mapping.mip import MipSearch
from metasched.policy.mapping.olb import Olb
from metasched.policy.mapping.sufferage import Sufferage
from metasched.policy.mapping.tabu import TabuSearch

REGISTRY: dict[str, type[Mapper]] = build_registry(
    Olb,
    Met,
    Mct,
    MinMin,
    MaxMin,
    Sufferage,
    Duplex,
    GeneticAlgorithm,
    SimulatedAnnealing,
    TabuSearch,
    IteratedLocalSearch,
    LpRounding,
    MipSearch,
)

#: Schedulers of dependent tasks (DAG jobs).
DAG_REGISTRY: dict[str, type[DagScheduler]] = build_registry(Generational, Clustering)

#: The mappers that are searches (take a time budget, a clock, a seed and an iteration cap).
SEARCH_KEYS = tuple(key for key, cls in REGISTRY.items() if issubclass(cls, SearchMapper))


def build_mapper(key: str, *, seed: int = 0, iterations: int | None = None) -> Mapper:
    """The mapper ``key`` of :data:`REGISTRY`; a search gets ``seed`` and, if given, an iteration
    cap instead of its default, and no clock: its result depends on its inputs only."""
    cls = REGISTRY[key]
    if issubclass(cls, SearchMapper):
        if iterations is None:
            return cls(seed=seed)
        return cls(seed=seed, max_iterations=iterations)
    return cls()


__all__ = [
    "DAG_REGISTRY",
    "REGISTRY",
    "SEARCH_KEYS",
    "Clustering",
    "DagScheduler",
    "Duplex",
    "Generational",
    "GeneticAlgorithm",
    "IteratedLocalSearch",
    "LpRounding",
    "Mapper",
    "MaxMin",
    "Mct",
    "Met",
    "MinMin",
    "MipSearch",
    "Olb",
    "SearchMapper",
    "SearchOutcome",
    "SimulatedAnnealing",
    "Sufferage",
    "TabuSearch",
    "build_mapper",
]
