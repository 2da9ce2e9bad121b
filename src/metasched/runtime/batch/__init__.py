"""Batch adapters: one file per batch system. Add a class here and to ``REGISTRY``."""

from metasched.runtime.batch.base import BatchAdapter, BatchError, PlaceholderSpec, SiteDown
from metasched.runtime.batch.gridengine import GridEngineAdapter
from metasched.runtime.batch.local import LocalAdapter
from metasched.runtime.batch.pbs import PbsAdapter
from metasched.runtime.batch.slurm import SlurmAdapter

REGISTRY: dict[str, type[BatchAdapter]] = {
    cls.key: cls for cls in (LocalAdapter, SlurmAdapter, GridEngineAdapter, PbsAdapter)
}

__all__ = [
    "REGISTRY",
    "BatchAdapter",
    "BatchError",
    "GridEngineAdapter",
    "LocalAdapter",
    "PbsAdapter",
    "PlaceholderSpec",
    "SiteDown",
    "SlurmAdapter",
]
