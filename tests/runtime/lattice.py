"""A workflow shaped like the checkers-database lattice of seed 003 (figure 7): levels widen then narrow,
each slice depends on its neighbours one level up."""

from __future__ import annotations

from metasched.runtime.metaqueue.records import JobSpec


def lattice(width: int, command: str) -> list[JobSpec]:
    """Levels of widths 1, 2, ..., width, ..., 2, 1; slice (l, i) waits for slices (l-1, i-1) and (l-1, i)
    when they exist (i shifted by one on the narrowing side). ``command`` may use ``{name}``."""
    widths = list(range(1, width + 1)) + list(range(width - 1, 0, -1))
    specs: list[JobSpec] = []
    for level, w in enumerate(widths):
        for i in range(w):
            name = f"L{level:02d}_{i:02d}"
            if level == 0:
                after: list[str] = []
            elif w > widths[level - 1]:
                after = [f"L{level - 1:02d}_{j:02d}" for j in (i - 1, i) if 0 <= j < widths[level - 1]]
            else:
                after = [f"L{level - 1:02d}_{j:02d}" for j in (i, i + 1)]
            specs.append(JobSpec(command=command.format(name=name), name=name, after=after))
    return specs
