"""The mapper registry lists every mapper module's class."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import metasched.policy.mapping as mapping_pkg
from metasched.policy.mapping import DAG_REGISTRY, REGISTRY
from metasched.policy.mapping.base import DagScheduler, Mapper, SearchMapper


def test_every_mapper_class_is_registered() -> None:
    found = []
    for info in pkgutil.iter_modules(mapping_pkg.__path__):
        module = importlib.import_module(f"{mapping_pkg.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Mapper) and cls.__module__ == module.__name__ and not inspect.isabstract(cls):
                found.append(cls)
                assert cls in REGISTRY.values(), f"{cls.__name__} ({module.__name__}) is missing from REGISTRY"
            if issubclass(cls, DagScheduler) and cls.__module__ == module.__name__ and not inspect.isabstract(cls):
                assert cls in DAG_REGISTRY.values(), f"{cls.__name__} is missing from DAG_REGISTRY"
    assert len(found) == len(REGISTRY)
    for key, cls in REGISTRY.items():
        assert cls.key == key
        assert cls.__doc__ and "Source" in cls.__doc__ and "Invariant" in cls.__doc__ and "Tie-break" in cls.__doc__


def test_the_issue_s_mappers_are_all_there() -> None:
    for key in ("olb", "met", "mct", "min-min", "max-min", "sufferage", "duplex", "ga", "sa", "tabu", "ils"):
        assert key in REGISTRY
    assert SearchMapper in REGISTRY["ils"].__mro__
