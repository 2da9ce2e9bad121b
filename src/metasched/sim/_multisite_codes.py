"""Codes of the compiled multi-site event loop (:mod:`metasched.sim._multisite_kernel`), apart
from it so that choosing whether to use it does not import numba."""

from __future__ import annotations

LOCAL_CONSERVATIVE, LOCAL_EASY = 0, 1
DECIDE_START, DECIDE_COMPLETION, DECIDE_SLOWER, DECIDE_SLOWER_NO_KILL = 0, 1, 2, 3
ORDER_FCFS, ORDER_EFFICACY = 0, 1
SELECT_LOAD, SELECT_COMPLETION = 0, 1
