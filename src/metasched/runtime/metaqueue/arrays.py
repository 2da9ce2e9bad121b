"""Job arrays and dependency kinds in the batch user's idiom (``sbatch --array``, ``--dependency``; issue 36).

Light: no database, no pydantic (``metasched submit`` imports it).

An array ``1-100[:step][%max_running]`` (or a comma list of such ranges) is expanded into one job per
index: ``{index}`` in the command is replaced by the index, which is also in ``METASCHED_ARRAY_INDEX``;
``--each-line FILE`` makes one job per line (the line in ``{line}`` and ``METASCHED_ARRAY_LINE``, its
number in the index). The array is submitted in one transaction. ``%max_running`` is kept by
dependencies: element ``k`` waits (``afterany``) for element ``k - max_running`` to end, so at most
``max_running`` elements are ever queued-ready or running at once (a failed element does not stop the
others).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from metasched.runtime.metaqueue.records import DEP_KINDS, JobSpec, StoreError

#: Most elements one array may have (one request, one transaction).
MAX_ARRAY = 100_000
_RANGE = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$")
_KINDS = {f"after{k}": k for k in DEP_KINDS}
INDEX_ENV = "METASCHED_ARRAY_INDEX"
LINE_ENV = "METASCHED_ARRAY_LINE"


def parse_array(text: str) -> tuple[list[int], int | None]:
    """``"1-100:2%10"`` -> (indices, max running at once or None). Forms as ``sbatch --array``:
    ``N``, ``A-B``, ``A-B:STEP``, comma-separated, then an optional ``%MAX``."""
    spec, _, limit = str(text).strip().partition("%")
    max_running: int | None = None
    if _:
        if not limit.isdigit() or int(limit) < 1:
            raise StoreError(f"bad array {text!r}: after % comes the most elements running at once (>= 1)")
        max_running = int(limit)
    indices: list[int] = []
    for part in spec.split(","):
        m = _RANGE.match(part.strip())
        if not m:
            raise StoreError(f"bad array {text!r}: use 1-100, 1-100:2, 1,5,9 or 0-15%4 (as sbatch --array)")
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) is not None else first
        step = int(m.group(3)) if m.group(3) is not None else 1
        if last < first or step < 1:
            raise StoreError(f"bad array {text!r}: in A-B:STEP, A <= B and STEP >= 1")
        if (last - first) // step + 1 + len(indices) > MAX_ARRAY:
            raise StoreError(f"bad array {text!r}: at most {MAX_ARRAY} elements")
        indices.extend(range(first, last + 1, step))
    if len(set(indices)) != len(indices):
        raise StoreError(f"bad array {text!r}: an index appears twice")
    return indices, max_running


def parse_after(value: Any) -> tuple[list[str], dict[str, str]]:
    """``--after`` -> (references, ``{reference: kind}`` for the non-``ok`` ones).

    Comma-separated items (or a list): ``NAME`` or ``ID`` (afterok), or as ``sbatch --dependency``
    ``afterok:A[:B...]``, ``afterany:A[:B...]``, ``afternotok:A[:B...]``."""
    items = value if isinstance(value, list | tuple) else str(value or "").split(",")
    refs: list[str] = []
    kinds: dict[str, str] = {}
    for item in items:
        item = str(item).strip()
        if not item:
            continue
        head, sep, rest = item.partition(":")
        if sep and head in _KINDS:
            targets = [t.strip() for t in rest.split(":")]
            if not all(targets):
                raise StoreError(f"bad dependency {item!r}: {head}:NAME[:NAME...]")
            kind = _KINDS[head]
        elif sep and head.startswith("after"):
            raise StoreError(f"bad dependency {item!r}: afterok, afterany or afternotok (as sbatch --dependency)")
        else:
            targets, kind = [item], "ok"
        for t in targets:
            if t in kinds or t in refs:
                if kinds.get(t, "ok") != kind:
                    raise StoreError(f"bad dependency {item!r}: {t} is given twice with different kinds")
                continue
            refs.append(t)
            if kind != "ok":
                kinds[t] = kind
    return refs, kinds


def expand(
    spec: JobSpec, indices: Sequence[int], max_running: int | None = None, lines: Sequence[str] | None = None
) -> list[JobSpec]:
    """One job per index (or per line, numbered from 1): ``{index}`` (and ``{line}``) in the command replaced,
    ``METASCHED_ARRAY_INDEX`` (and ``METASCHED_ARRAY_LINE``) in its environment, the name ``NAME_INDEX``;
    ``max_running`` by afterany dependencies on the element ``max_running`` places before."""
    if lines is not None:
        indices = range(1, len(lines) + 1)
    if not indices:
        raise StoreError("empty array: no index (or the file has no line)")
    if len(indices) > MAX_ARRAY:
        raise StoreError(f"array of {len(indices)} elements: at most {MAX_ARRAY}")
    out = []
    for k, i in enumerate(indices):
        command = spec.command.replace("{index}", str(i))
        env = {**spec.env, INDEX_ENV: str(i)}
        if lines is not None:
            command = command.replace("{line}", lines[k])
            env[LINE_ENV] = lines[k]
        after, kinds = list(spec.after), dict(spec.after_kinds)
        if max_running is not None and k >= max_running:
            ref = f"\0{k - max_running}"
            after.append(ref)
            kinds[ref] = "any"
        out.append(
            replace(
                spec,
                command=command,
                env=env,
                name=f"{spec.name}_{i}" if spec.name else None,
                after=after,
                after_kinds=kinds,
            )
        )
    return out
