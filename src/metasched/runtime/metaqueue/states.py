"""State vocabularies of the metaqueue (jobs and placeholders)."""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    """Where a metaqueue job is. A job is *ready* when ``QUEUED`` and every dependency is ``DONE``."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    DEP_FAILED = "dep_failed"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({JobState.DONE, JobState.FAILED, JobState.CANCELLED, JobState.DEP_FAILED})
#: States that make a job's dependents "dependency failed".
BROKEN = frozenset({JobState.FAILED, JobState.CANCELLED, JobState.DEP_FAILED})


class PlaceholderState(StrEnum):
    """Where a placeholder is, in our words (each batch adapter maps its native states onto these).

    ``EXPIRED``: it reached its wall-time limit. In the pilot model that is expected, not a failure.
    """

    SUBMITTED = "submitted"
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    EXPIRED = "expired"
    FAILED = "failed"
    CANCELLED = "cancelled"
    VANISHED = "vanished"
    UNKNOWN = "unknown"

    @property
    def is_active(self) -> bool:
        return self in (PlaceholderState.SUBMITTED, PlaceholderState.QUEUED, PlaceholderState.RUNNING)
