"""The live metaqueue: the store (SQLite or PostgreSQL), workflow parsing, the HTTP service."""

from metasched.runtime.metaqueue.states import JobState, PlaceholderState
from metasched.runtime.metaqueue.store import ClaimedJob, ClaimResult, JobSpec, Store, StoreError

__all__ = ["ClaimResult", "ClaimedJob", "JobSpec", "JobState", "PlaceholderState", "Store", "StoreError"]
