"""How a summary names a trace: its full file name and what its SWF header says of the machine.

One helper for every experiment that reads SWF traces (sabin2003, ernemann2002), so that two
different traces of one site (two SDSC logs) never read alike in a summary: the file name is
given whole, and the header's ``Computer``, ``Installation`` and ``MaxProcs`` words follow it.
"""

from __future__ import annotations

import os
from pathlib import Path

from metasched.workload.swf import read_header

#: The SWF header fields a summary quotes, in this order.
HEADER_WORDS = ("Computer", "Installation", "MaxProcs")


def trace_words(path: str | os.PathLike[str]) -> str:
    """``NAME (Computer: ..., Installation: ..., MaxProcs: ...)`` for the trace at ``path``: its
    full file name, then the header fields it has (none: the file name alone)."""
    header = read_header(path)
    words = ", ".join(f"{k}: {header[k]}" for k in HEADER_WORDS if header.get(k))
    name = Path(path).name
    return f"{name} ({words})" if words else name
