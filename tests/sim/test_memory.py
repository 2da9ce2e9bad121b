"""``keep_freed_memory``: a block freed by one run is reused by the next without page faults."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")

# A fresh process allocates, touches and frees six 12 MB blocks three times over (as runs of the
# compiled loop do their tables) and prints the page faults of the last time. (By default glibc
# serves the first round's blocks with fresh pages, raises its thresholds when they are freed, then
# serves the next rounds from its heap but gives the heap's free top back to the kernel each time.)
PROBE = """
import resource, sys
import numpy as np
from metasched.sim._memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [np.ones(3 << 19) for _ in range(6)]  # 12 MB each, every page touched
    del blocks
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _last_round_faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


def test_freed_blocks_are_reused_without_page_faults() -> None:
    pages = 6 * (12 << 20) // 4096
    # the control: by default a good part of the last round's pages fault again (~3,000 of 18,432
    # here), so the test can tell the setting from none
    assert _last_round_faults("default") > pages // 10
    assert _last_round_faults("keep") < pages // 100
