"""The throttle contract: from a placeholder's observed queue wait, the new number of placeholders."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar


class Throttle(ABC):
    """Decides, each time a placeholder starts, how many placeholders the site should keep.

    Invariant every implementation keeps: the answer lies in ``[lower, limit]``.
    """

    key: ClassVar[str]

    @abstractmethod
    def decide(self, wait_s: float) -> str:
        """``"increase"``, ``"maintain"`` or ``"reduce"`` for a placeholder that waited ``wait_s``."""

    def target(self, current: int, wait_s: float, *, lower: int, limit: int) -> tuple[str, int]:
        """The decision and the new target count, clamped to ``[lower, limit]``."""
        decision = self.decide(wait_s)
        step = {"increase": 1, "maintain": 0, "reduce": -1}[decision]
        return decision, max(lower, min(limit, current + step))
