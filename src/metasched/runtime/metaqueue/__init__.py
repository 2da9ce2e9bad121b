"""The live metaqueue: the store (SQLite or PostgreSQL), workflow parsing, the HTTP service.

Import the heavy parts from their modules (``store``, ``service``); this package only re-exports records.
"""

from metasched.runtime.metaqueue.records import ClaimedJob, ClaimResult, JobSpec, StoreError
from metasched.runtime.metaqueue.states import JobState, PlaceholderState

__all__ = ["ClaimResult", "ClaimedJob", "JobSpec", "JobState", "PlaceholderState", "StoreError"]
