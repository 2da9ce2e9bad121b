"""Software licences: a type and how many copies of it may be active at once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Licence:
    """A software licence of one cluster's pool: ``copies`` may be active at the same instant.

    Source: seed 004 section 3 ("each license is described by a type and its availability").
    Licences are identified by their index in a cluster's ``licences`` tuple (the same index means
    the same licence type in every cluster).
    """

    name: str
    copies: int

    def __post_init__(self) -> None:
        if self.copies < 0:
            raise ValueError(f"licence {self.name!r}: copies must be >= 0, got {self.copies}")
