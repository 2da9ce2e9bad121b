"""Workflow files and resource strings: YAML job lists and Trellis ``mqsub`` lines -> :class:`JobSpec`.

YAML: a list of mappings with ``name``, ``command`` and optional ``after`` (list of names, or one
name), ``cpus``, ``mem`` ("512M", "4G", or MB as a number), ``time`` (seconds, "90s", "10m",
"2h", "H:MM:SS"), ``licences`` (``{name: count}`` or a list of names), ``cwd``, ``env``.

Trellis (Pinchak, Lu, Goldenberg, seed 003, figure 9): one job per line,
``[mqsub.py] -deps "A B" -l LABEL -c "COMMAND"``; blank lines and ``#`` comments are skipped.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from metasched.runtime.metaqueue.records import JobSpec, StoreError

_MEM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_DUR = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)


def parse_mem_mb(value: Any) -> int:
    """Memory in MB from ``512``, ``"512M"``, ``"4G"``, ``"1T"``, ``"2048k"``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    m = _MEM.match(str(value))
    if not m:
        raise StoreError(f"bad memory {value!r}: use e.g. 512M, 4G or a number of MB")
    scale = {"": 1, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def parse_duration_s(value: Any) -> float:
    """Seconds from ``90``, ``"90s"``, ``"10m"``, ``"2h"``, ``"1d"``, ``"H:MM:SS"`` or ``"MM:SS"``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    if ":" in text:
        try:
            parts = [float(p) for p in text.split(":")]
        except ValueError:
            raise StoreError(f"bad duration {value!r}") from None
        if len(parts) > 3:
            raise StoreError(f"bad duration {value!r}: at most H:MM:SS")
        total = 0.0
        for p in parts:
            total = total * 60 + p
        return total
    m = _DUR.match(text)
    if not m:
        raise StoreError(f"bad duration {value!r}: use seconds, 90s, 10m, 2h or H:MM:SS")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2).lower()]


def parse_licences(value: Any) -> dict[str, int]:
    """``{name: count}`` from a mapping, a list of names, or ``"a,b:2"``."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): int(v) for k, v in value.items()}
    items = value if isinstance(value, list) else str(value).split(",")
    out: dict[str, int] = {}
    for item in items:
        item = str(item).strip()
        if not item:
            continue
        name, _, count = item.partition(":")
        out[name] = out.get(name, 0) + (int(count) if count else 1)
    return out


_KEYS = {
    "name",
    "command",
    "after",
    "cpus",
    "mem",
    "time",
    "licences",
    "licenses",
    "cwd",
    "env",
    "max_attempts",
    "deadline",
    "user_class",
    "params",
    "inputs",
    "outputs",
}


def parse_params(value: Any, where: str = "job") -> dict[str, float]:
    """Job parameters: a mapping ``{name: number}`` or ``NAME=NUMBER`` strings (``--param n=1000``)."""
    if value is None:
        return {}
    items: list[tuple[Any, Any]]
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list | tuple):
        items = []
        for text in value:
            name, sep, number = str(text).partition("=")
            if not sep:
                raise StoreError(f"{where}: parameter {text!r} must be NAME=NUMBER")
            items.append((name.strip(), number.strip()))
    else:
        raise StoreError(f"{where}: params must be a mapping of names to numbers, got {value!r}")
    out: dict[str, float] = {}
    for name, number in items:
        try:
            out[str(name)] = float(number)
        except (TypeError, ValueError):
            raise StoreError(f"{where}: parameter {name!r} must be a number, got {number!r}") from None
    return out


def spec_from_mapping(entry: Any, index: int, default_cwd: str = "", base_dir: Path | None = None) -> JobSpec:
    """One YAML entry -> :class:`JobSpec` (errors name the entry).

    ``inputs``/``outputs`` (issue 9, staging; local paths relative to ``base_dir``) wrap the command in the
    staging protocol of :mod:`metasched.runtime.remote.staging` and carry the spec in the job's env.
    """
    where = f"workflow entry {index + 1}"
    if not isinstance(entry, dict):
        raise StoreError(f"{where}: expected a mapping with name and command, got {type(entry).__name__}")
    unknown = set(entry) - _KEYS
    if unknown:
        raise StoreError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_KEYS))}")
    if "command" not in entry or "name" not in entry:
        raise StoreError(f"{where}: needs both 'name' and 'command'")
    after = entry.get("after") or []
    if isinstance(after, str | int):
        after = str(after).split()
    command = str(entry["command"])
    env = {str(k): str(v) for k, v in (entry.get("env") or {}).items()}
    if "inputs" in entry or "outputs" in entry:
        from metasched.runtime.remote.staging import STAGE_ENV, StageSpec, wrap_command

        try:
            stage = StageSpec.from_workflow(entry, base_dir=base_dir, where=where)
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        if not stage.is_empty:
            env[STAGE_ENV] = stage.as_json()
            command = wrap_command(command)
    return JobSpec(
        command=command,
        name=str(entry["name"]),
        after=[str(a) for a in after],
        cpus=int(entry.get("cpus", 1)),
        mem_mb=parse_mem_mb(entry.get("mem", 0)),
        licences=parse_licences(entry.get("licences", entry.get("licenses"))),
        time_s=parse_duration_s(entry.get("time", 0)),
        cwd=str(entry.get("cwd", default_cwd)),
        env=env,
        max_attempts=int(entry.get("max_attempts", 3)),
        deadline_s=parse_duration_s(entry["deadline"]) if entry.get("deadline") else None,
        user_class=str(entry.get("user_class", "regular")).lower(),
        params=parse_params(entry.get("params"), where),
    )


def parse_trellis_line(line: str, lineno: int, default_cwd: str = "") -> JobSpec:
    """``[mqsub.py] -deps "A B" -l LABEL -c "COMMAND"`` -> :class:`JobSpec`."""
    try:
        tokens = shlex.split(line)
    except ValueError as exc:
        raise StoreError(f"line {lineno}: {exc}") from None
    if tokens and not tokens[0].startswith("-"):
        tokens = tokens[1:]
    deps: list[str] = []
    label = command = None
    i = 0
    while i < len(tokens):
        flag = tokens[i]
        if i + 1 >= len(tokens):
            raise StoreError(f"line {lineno}: {flag} needs a value")
        value = tokens[i + 1]
        if flag == "-deps":
            deps = value.split()
        elif flag == "-l":
            label = value
        elif flag == "-c":
            command = value
        else:
            raise StoreError(f"line {lineno}: unknown flag {flag!r} (Trellis lines use -deps, -l, -c)")
        i += 2
    if not label or not command:
        raise StoreError(f"line {lineno}: a Trellis line needs -l LABEL and -c COMMAND")
    return JobSpec(command=command, name=label, after=deps, cwd=default_cwd)


def read_workflow(path: str | Path, default_cwd: str = "") -> list[JobSpec]:
    """Read a workflow file: a YAML list of jobs, or Trellis ``-deps/-l/-c`` lines."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise StoreError(f"cannot read workflow {path}: {exc.strerror}") from None
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if lines and all(re.search(r"(^|\s)-(l|c)\s", ln) for ln in lines):
        return [parse_trellis_line(ln, n + 1, default_cwd) for n, ln in enumerate(lines)]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise StoreError(f"{path}: not valid YAML ({exc})") from None
    if isinstance(data, dict) and "jobs" in data:
        data = data["jobs"]
    if not isinstance(data, list):
        raise StoreError(f"{path}: expected a YAML list of jobs (or Trellis -deps/-l/-c lines)")
    return [spec_from_mapping(e, i, default_cwd, base_dir=path.resolve().parent) for i, e in enumerate(data)]
