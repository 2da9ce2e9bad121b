"""Workflow files and resource strings: YAML job lists and Trellis ``mqsub`` lines -> :class:`JobSpec`.

One typed description of a job's fields (:data:`FIELD_PARSERS`), from which the pydantic model of a
workflow entry (:class:`~metasched.runtime.metaqueue.workflow_model.WorkflowEntry`) and ``submit``'s
options (:func:`submit_spec`) are checked: every value is checked and a refusal names its place
(``workflow.yaml: jobs[3].cpus: cpus must be a whole number from 1 to ..., got 'abc'``; ``--cpus: ...``).
The JSON Schema of the file is
:func:`~metasched.runtime.metaqueue.workflow_model.workflow_json_schema` (``metasched workflow-schema``).
This module loads neither pydantic nor PyYAML until a file is read (``metasched submit`` needs neither).

YAML: a list of mappings (or ``{jobs: [...]}``) with ``name``, ``command`` and optional ``after``
(list of names, or one name), ``cpus`` (per task), ``tasks`` (MPI ranks), ``nodes``, ``mem`` ("512M", "4G",
or MB as a number), ``time`` (as ``sbatch --time``: minutes as a bare number, "MM:SS", "HH:MM:SS", "D-HH",
"D-HH:MM:SS"; or "90s", "10m", "2h"), ``licences`` (``{name: count}`` or a list of names), ``cwd``, ``env``,
``max_attempts``, ``deadline``, ``user_class``, ``params``, ``inputs``, ``outputs``. Values are taken
as written or refused, never silently changed: a name or command that YAML read as a number, a
boolean or null must be quoted; ``cpus: 1.5``, ``time: .inf`` and NaN are refused; a number of MB is
rounded up to a whole MB. Limits (the store's 32-bit integer columns, and a sane bound on times):
cpus and mem (MB) at most 2**31 - 1, times at most 1e9 s, ``max_attempts`` at most 1000. The file
must be UTF-8 text; YAML nesting is bounded (libyaml's 1,000 levels; 64 in a file with anchors or
without libyaml) and so is alias expansion (an alias counts as
the nodes it stands for: a file whose aliases stand for more than 16 x its own nodes + 10,000 is
refused, the "billion laughs").

Trellis (Pinchak, Lu, Goldenberg, seed 003, figure 9): one job per line,
``[mqsub.py] -deps "A B" -l LABEL -c "COMMAND"``; blank lines and ``#`` comments are skipped. A label
is the job's name, except that a name of digits only means a job id everywhere in metasched
(``--after 12``, ``logs 12``): an all-digit label ``3200`` becomes the name ``L3200`` (and a
dependency ``0022`` the name ``L0022``), so ``metasched logs L3200`` shows that job.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metasched.runtime.metaqueue.records import JobSpec, StoreError

if TYPE_CHECKING:
    from metasched.runtime.metaqueue.workflow_model import WorkflowEntry

__all__ = [
    "FIELD_PARSERS",
    "MAX_INT",
    "MAX_SECONDS",
    "MAX_TASKS",
    "SUBMIT_OPTIONS",
    "parse_duration_s",
    "parse_licences",
    "parse_mem_mb",
    "parse_params",
    "parse_trellis_line",
    "parse_walltime_s",
    "read_workflow",
    "spec_from_mapping",
    "submit_spec",
    "trellis_name",
]

#: The store keeps cpus, mem_mb and attempts in INTEGER columns (32-bit on PostgreSQL).
MAX_INT = 2**31 - 1
#: Longest time (estimate or deadline) accepted, in seconds (about 31.7 years).
MAX_SECONDS = 1e9
MAX_ATTEMPTS = 1000
#: Most MPI ranks (and nodes) one job may ask for (a sane bound, far above any placeholder).
MAX_TASKS = 1_000_000
MAX_DEPTH = 64
_ALIAS_FACTOR = 16
_ALIAS_SLACK = 10_000

_MEM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_DUR = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_CLOCK_PART = re.compile(r"^\d+(?:\.\d+)?$")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_mem_mb(value: Any) -> int:
    """Memory in MB from ``512``, ``"512M"``, ``"4G"``, ``"1T"``, ``"2048k"`` (rounded up to a whole MB;
    at most :data:`MAX_INT`)."""
    if _is_number(value):
        mb = float(value)
    elif isinstance(value, str):
        m = _MEM.match(value)
        if not m:
            raise StoreError(f"bad memory {_short(value)}: use e.g. 512M, 4G or a number of MB")
        scale = {"": 1, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[m.group(2).lower()]
        mb = float(m.group(1)) * scale
    else:
        raise StoreError(f"bad memory {_short(value)}: use e.g. 512M, 4G or a number of MB")
    if not math.isfinite(mb) or mb < 0 or mb > MAX_INT:
        raise StoreError(f"bad memory {_short(value)}: must be between 0 and {MAX_INT} MB")
    return math.ceil(mb)


def parse_duration_s(value: Any) -> float:
    """Seconds from ``90``, ``"90s"``, ``"10m"``, ``"2h"``, ``"1d"``, ``"H:MM:SS"`` or ``"MM:SS"``
    (finite, >= 0, at most :data:`MAX_SECONDS`; minutes and seconds after a colon below 60)."""
    if _is_number(value):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if ":" in text:
            parts = text.split(":")
            if len(parts) > 3:
                raise StoreError(f"bad duration {_short(value)}: at most H:MM:SS")
            if not all(_CLOCK_PART.match(p) for p in parts) or any(float(p) >= 60 for p in parts[1:]):
                raise StoreError(f"bad duration {_short(value)}: use H:MM:SS or MM:SS (MM and SS below 60)")
            seconds = 0.0
            for p in parts:
                seconds = seconds * 60 + float(p)
        else:
            m = _DUR.match(text)
            if not m:
                raise StoreError(f"bad duration {_short(value)}: use seconds, 90s, 10m, 2h or H:MM:SS")
            seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2).lower()]
    else:
        raise StoreError(f"bad duration {_short(value)}: use seconds, 90s, 10m, 2h or H:MM:SS")
    if not math.isfinite(seconds) or seconds < 0 or seconds > MAX_SECONDS:
        raise StoreError(f"bad duration {_short(value)}: must be between 0 and {MAX_SECONDS:.0e} seconds")
    return seconds


def _count(value: Any, what: str, lo: int, hi: int) -> int:
    """A whole number in ``[lo, hi]`` (an integral float like ``2.0`` counts; booleans do not)."""
    if isinstance(value, str) and value.strip().lstrip("+").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise StoreError(f"{what} must be a whole number from {lo} to {hi}, got {_short(value)}")
    return value


_SLURM_TIME = re.compile(r"^(?:(\d+)-)?(\d+(?:\.\d+)?)(?::(\d+(?:\.\d+)?))?(?::(\d+(?:\.\d+)?))?$")


def parse_walltime_s(value: Any) -> float:
    """A job's wall-time estimate (``--time``, ``time:``) in seconds, in Slurm's forms (``sbatch --time``):
    ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``; a bare number is MINUTES, as in
    Slurm (a number in a workflow file too). ``90s``, ``10m``, ``2h``, ``1d`` are accepted as well.
    Minutes and seconds after a colon are below 60, hours after ``D-`` below 24."""
    if _is_number(value):
        seconds = float(value) * 60
    elif isinstance(value, str):
        text = value.strip()
        m = _SLURM_TIME.match(text)
        if m is None:
            unit = _DUR.match(text)
            if not unit or not unit.group(2):
                raise StoreError(
                    f"bad time {_short(value)}: use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS "
                    "(as sbatch --time) or 90s, 10m, 2h, 1d"
                )
            seconds = float(unit.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit.group(2).lower()]
        else:
            days, first, second, third = m.groups()
            parts = [float(p) for p in (first, second, third) if p is not None]
            if days is not None:
                # D-HH, D-HH:MM, D-HH:MM:SS
                if parts[0] >= 24 or any(p >= 60 for p in parts[1:]):
                    raise StoreError(f"bad time {_short(value)}: in D-HH:MM:SS, HH is below 24, MM and SS below 60")
                seconds = int(days) * 86400 + sum(p * f for p, f in zip(parts, (3600, 60, 1), strict=False))
            elif len(parts) == 1:
                seconds = parts[0] * 60  # MM
            elif len(parts) == 2:
                if parts[1] >= 60:
                    raise StoreError(f"bad time {_short(value)}: in MM:SS, SS is below 60")
                seconds = parts[0] * 60 + parts[1]  # MM:SS
            else:
                if parts[1] >= 60 or parts[2] >= 60:
                    raise StoreError(f"bad time {_short(value)}: in HH:MM:SS, MM and SS are below 60")
                seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    else:
        raise StoreError(f"bad time {_short(value)}: use minutes, HH:MM:SS or D-HH:MM:SS")
    if not math.isfinite(seconds) or seconds < 0 or seconds > MAX_SECONDS:
        raise StoreError(f"bad time {_short(value)}: must be between 0 and {MAX_SECONDS:.0e} seconds")
    return seconds


def parse_licences(value: Any) -> dict[str, int]:
    """``{name: count}`` from a mapping, a list of names, or ``"a,b:2"`` (names non-empty, counts >= 1)."""
    if value is None:
        return {}
    out: dict[str, int] = {}
    if isinstance(value, dict):
        pairs = [(k, v) for k, v in value.items()]
    elif isinstance(value, list | str):
        items = value if isinstance(value, list) else value.split(",")
        pairs = []
        for item in items:
            if not isinstance(item, str):
                raise StoreError(f"licence {_short(item)} must be a name (NAME or NAME:COUNT)")
            if not item.strip() and isinstance(value, str):
                continue
            name, sep, count = item.strip().partition(":")
            pairs.append((name, count if sep else 1))
    else:
        raise StoreError(f"licences must be a mapping of names to counts or a list of names, got {_short(value)}")
    for name, count in pairs:
        if not isinstance(name, str) or not name.strip():
            raise StoreError(f"licence name must be non-empty text, got {_short(name)}")
        n = _count(count, f"licence {name.strip()!r} count", 1, MAX_INT)
        key = name.strip()
        out[key] = min(MAX_INT, out.get(key, 0) + n)
    return out


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


# ----------------------------------------------------------------------------- one typed description


def _text(what: str, *, empty_ok: bool = False) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str):
            kind = "null" if value is None else type(value).__name__
            raise StoreError(f"{what} must be text, got {kind} {_short(value)} (quote it in YAML)")
        if "\x00" in value:
            raise StoreError(f"{what} must not contain a NUL byte")
        if not empty_ok and not value.strip():
            raise StoreError(f"{what} must not be empty")
        return value

    return parse


def _name(value: Any) -> str:
    name = _text("name")(value)
    if name.isdigit():
        raise StoreError(f"name {name!r} is all digits, which means a job id; use a name with a letter (e.g. L{name})")
    return name


def _after(value: Any) -> list[str]:
    if value is None:
        return []
    items = value.split() if isinstance(value, str) else value
    if not isinstance(items, list):
        raise StoreError(f"after must be a name or a list of names, got {_short(value)}")
    return [_text("after item")(a).strip() for a in items]


def _env(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise StoreError(f"env must be a mapping of variable names to values, got {_short(value)}")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key or "=" in key or "\x00" in key:
            raise StoreError(f"env variable name {_short(key)} must be non-empty text without '=' or NUL")
        if isinstance(item, bool) or item is None or not isinstance(item, str | int | float):
            raise StoreError(f"env {key}: value must be text or a number, got {_short(item)} (quote it in YAML)")
        if isinstance(item, float) and not math.isfinite(item):
            raise StoreError(f"env {key}: value must be finite, got {item!r}")
        text = str(item)
        if "\x00" in text:
            raise StoreError(f"env {key}: value must not contain a NUL byte")
        out[key] = text
    return out


def _deadline(value: Any) -> float | None:
    if value is None:
        return None
    seconds = parse_duration_s(value)
    if seconds <= 0:
        raise StoreError(f"deadline must be > 0 seconds after submission, got {_short(value)}")
    return seconds


def _user_class(value: Any) -> str:
    text = _text("user_class")(value).strip().lower()
    if text not in ("gold", "silver", "regular"):
        raise StoreError(f"user_class must be gold, silver or regular, got {_short(value)}")
    return text


def _params(value: Any) -> dict[str, float]:
    out = parse_params(value, "params")
    for key, number in out.items():
        if not key.isidentifier() or not math.isfinite(number):
            raise StoreError(f"params: {key!r} must be an identifier with a finite number, got {number!r}")
    return out


#: The checks of every field a job has however it is submitted, by field name: the one description
#: that the workflow file's pydantic model (:mod:`.workflow_model`) and ``metasched submit`` share.
FIELD_PARSERS: dict[str, Callable[[Any], Any]] = {
    "name": _name,
    "after": _after,
    "cpus": lambda v: _count(v, "cpus", 1, MAX_INT),
    "tasks": lambda v: _count(v, "tasks", 1, MAX_TASKS),
    "nodes": lambda v: _count(v, "nodes", 1, MAX_TASKS),
    "mem": parse_mem_mb,
    "time": parse_walltime_s,
    "licences": parse_licences,
    "max_attempts": lambda v: _count(v, "max_attempts", 1, MAX_ATTEMPTS),
    "deadline": _deadline,
    "user_class": _user_class,
    "params": _params,
    "command": _text("command"),
    "cwd": lambda v: None if v is None else _text("cwd")(v),
    "env": _env,
}
#: ``metasched submit``'s option for each field it takes.
SUBMIT_OPTIONS = {
    "name": "--name",
    "after": "--after",
    "cpus": "--cpus",
    "tasks": "--tasks",
    "nodes": "--nodes",
    "mem": "--mem",
    "time": "--time",
    "licences": "--licence",
    "max_attempts": "--max-attempts",
    "deadline": "--deadline",
    "user_class": "--user-class",
    "params": "--param",
}


def __getattr__(name: str) -> Any:
    # The pydantic models load pydantic (~0.2 s): only the commands that read workflow files pay for it.
    if name in ("WorkflowEntry", "SubmitOptions", "workflow_json_schema", "format_errors"):
        from metasched.runtime.metaqueue import workflow_model

        return getattr(workflow_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _check_tasks_nodes(tasks: int, nodes: int) -> None:
    if nodes > tasks:
        raise StoreError(f"{nodes} nodes for {tasks} task(s): a job needs at least one task (--tasks) per node")


def _to_spec(entry: WorkflowEntry, where: str, default_cwd: str, base_dir: Path | None) -> JobSpec:
    command, env = entry.command, dict(entry.env)
    try:
        _check_tasks_nodes(entry.tasks, entry.nodes)
    except StoreError as exc:
        raise StoreError(f"{where}.nodes: {exc}") from None
    if entry.inputs is not None or entry.outputs is not None:
        from metasched.runtime.remote.staging import STAGE_ENV, StageSpec, wrap_command

        try:
            stage = StageSpec.from_workflow(
                {"inputs": entry.inputs, "outputs": entry.outputs}, base_dir=base_dir, where=where
            )
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        if not stage.is_empty:
            env[STAGE_ENV] = stage.as_json()
            command = wrap_command(command)
    return JobSpec(
        command=command,
        name=entry.name,
        after=list(entry.after),
        cpus=entry.cpus,
        tasks=entry.tasks,
        nodes=entry.nodes,
        mem_mb=entry.mem,
        licences=dict(entry.licences),
        time_s=entry.time,
        cwd=default_cwd if entry.cwd is None else entry.cwd,
        env=env,
        max_attempts=entry.max_attempts,
        deadline_s=entry.deadline,
        user_class=entry.user_class,
        params=dict(entry.params),
    )


def spec_from_mapping(entry: Any, index: int, default_cwd: str = "", base_dir: Path | None = None) -> JobSpec:
    """One YAML entry -> :class:`JobSpec`; a refusal names the entry's field (``jobs[0].cpus: ...``).

    ``inputs``/``outputs`` (issue 9, staging; local paths relative to ``base_dir``) wrap the command in the
    staging protocol of :mod:`metasched.runtime.remote.staging` and carry the spec in the job's env.
    """
    from pydantic import ValidationError

    from metasched.runtime.metaqueue.workflow_model import WorkflowEntry, format_errors

    where = f"jobs[{index}]"
    try:
        model = WorkflowEntry.model_validate(entry)
    except ValidationError as exc:
        raise StoreError(format_errors(exc, where)) from None
    return _to_spec(model, where, default_cwd, base_dir)


def submit_spec(command: str, cwd: str, **options: Any) -> JobSpec:
    """``metasched submit``'s options -> :class:`JobSpec`, with the checks of a workflow entry
    (:data:`FIELD_PARSERS`); a refusal names the option (``--cpus: cpus must be a whole number ...``).
    ``None`` means the option was not given."""
    values: dict[str, Any] = {}
    for key, value in options.items():
        if key not in SUBMIT_OPTIONS:
            raise TypeError(f"submit_spec: unknown option {key!r}")
        if value is None:
            continue
        try:
            values[key] = FIELD_PARSERS[key](value)
        except StoreError as exc:
            raise StoreError(f"{SUBMIT_OPTIONS[key]}: {exc}") from None
    if not command.strip() or "\x00" in command:
        raise StoreError("the command must be non-empty text (after --)")
    try:
        _check_tasks_nodes(values.get("tasks", 1), values.get("nodes", 1))
    except StoreError as exc:
        raise StoreError(f"--nodes: {exc}") from None
    return JobSpec(
        command=command,
        name=values.get("name"),
        after=values.get("after", []),
        cpus=values.get("cpus", 1),
        tasks=values.get("tasks", 1),
        nodes=values.get("nodes", 1),
        mem_mb=values.get("mem", 0),
        licences=values.get("licences", {}),
        time_s=values.get("time", 0.0),
        cwd=cwd,
        max_attempts=values.get("max_attempts", 3),
        deadline_s=values.get("deadline"),
        user_class=values.get("user_class", "regular"),
        params=values.get("params", {}),
    )


# ----------------------------------------------------------------------------- Trellis lines


def trellis_name(label: str) -> str:
    """The job name of a Trellis label: the label, or ``L<label>`` when it is all digits (a name of
    digits only would mean a job id)."""
    return f"L{label}" if label.isdigit() else label


def parse_trellis_line(line: str, lineno: int, default_cwd: str = "") -> JobSpec:
    """``[mqsub.py] -deps "A B" -l LABEL -c "COMMAND"`` -> :class:`JobSpec` (see :func:`trellis_name`)."""
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
    if not label or not label.strip() or not command or not command.strip():
        raise StoreError(f"line {lineno}: a Trellis line needs -l LABEL and -c COMMAND")
    if "\x00" in line:
        raise StoreError(f"line {lineno}: NUL byte")
    return JobSpec(command=command, name=trellis_name(label), after=[trellis_name(d) for d in deps], cwd=default_cwd)


# ----------------------------------------------------------------------------- the file

#: The YAML loader: libyaml's C ``CSafeLoader`` where present, else PyYAML's ``SafeLoader`` (set on first use).
_Loader: Any = None


def _loader() -> Any:
    global _Loader
    if _Loader is None:
        import yaml

        _Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return _Loader


def _check_shape(text: str, source: str) -> None:
    """Refuse YAML nested deeper than :data:`MAX_DEPTH` or whose aliases stand for far more nodes than
    the file has (the "billion laughs"), before anything is built from it. Scans the parser's
    events (libyaml's, in C, when present)."""
    depth = 0
    nodes = 0
    expanded = 0
    # Per open collection: [expanded nodes inside it, its anchor]
    stack: list[list[Any]] = [[0, None]]
    sizes: dict[str, int] = {}
    event: Any
    import yaml

    for event in yaml.parse(text, Loader=_loader()):
        kind = type(event)
        if kind is yaml.ScalarEvent:
            nodes += 1
            stack[-1][0] += 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif kind is yaml.AliasEvent:
            size = sizes.get(event.anchor, 1)
            stack[-1][0] += size
            expanded += size
            if expanded > _ALIAS_FACTOR * nodes + _ALIAS_SLACK:
                raise StoreError(
                    f"{source}: YAML aliases expand to more than {_ALIAS_FACTOR} x the file's nodes + {_ALIAS_SLACK}"
                    " (refused: alias bomb?)"
                )
        elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            nodes += 1
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark is not None else "?"
                raise StoreError(f"{source}:{line}: YAML nested deeper than {MAX_DEPTH} levels")
            stack.append([1, event.anchor])
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            depth -= 1
            size, anchor = stack.pop()
            stack[-1][0] += size
            if anchor:
                sizes[anchor] = size


def _decode(data: bytes, source: str) -> str:
    if b"\x00" in data:
        raise StoreError(f"{source}: binary file (NUL bytes), not a YAML or Trellis workflow")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StoreError(f"{source}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def _line_of(text: str, wrapped: bool, loc: Sequence[int | str]) -> int | None:
    """The line (1-based) of the value at ``loc`` (``(3, "cpus")``: entry 3's cpus) in the YAML
    ``text``, for the error message; None if it cannot be found. Composes the file again: only on the
    error path."""
    import yaml

    try:
        node: Any = yaml.compose(text, Loader=_loader())
        if wrapped:
            node = next(v for k, v in node.value if k.value == "jobs")
        for part in loc:
            if isinstance(part, int) and isinstance(node, yaml.SequenceNode):
                node = node.value[part]
            elif isinstance(part, str) and isinstance(node, yaml.MappingNode):
                found = [(k, v) for k, v in node.value if k.value == part]
                if not found:
                    break  # (a missing key: the entry's own line)
                key, value = found[0]
                node = value if value.start_mark.line >= key.start_mark.line else key
            else:
                break
        return int(node.start_mark.line) + 1
    except Exception:  # any failure here only loses the line number of a message
        return None


def read_workflow(path: str | Path, default_cwd: str = "") -> list[JobSpec]:
    """Read a workflow file: a YAML list of jobs, or Trellis ``-deps/-l/-c`` lines.

    Every refusal is a :class:`StoreError` naming the file and the place (``FILE:LINE: jobs[3].cpus: ...``).
    """
    path = Path(path)
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StoreError(f"cannot read workflow {path}: {exc.strerror}") from None
    text = _decode(data, source)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if lines and all(re.search(r"(^|\s)-(l|c)\s", ln) for ln in lines):
        try:
            return [parse_trellis_line(ln, n + 1, default_cwd) for n, ln in enumerate(lines)]
        except StoreError as exc:
            raise StoreError(f"{source}: {exc}") from None
    import yaml

    try:
        # Without an anchor there is no alias, and libyaml bounds nesting itself (1000 levels): the
        # scan (a fifth of a large file's reading) is needed only with anchors or the Python loader.
        if "&" in text or _loader() is yaml.SafeLoader:
            _check_shape(text, source)
        loaded = yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        raise StoreError(f"{source}: not valid YAML ({' '.join(str(exc).split())})") from None
    except RecursionError:
        raise StoreError(f"{source}: YAML nested too deeply") from None
    prefix = "jobs"
    wrapped = isinstance(loaded, dict) and set(loaded) == {"jobs"}
    if wrapped:
        loaded = loaded["jobs"]
    elif isinstance(loaded, dict) and "jobs" in loaded:
        extra = ", ".join(sorted(map(str, set(loaded) - {"jobs"})))
        raise StoreError(
            f"{source}: unknown top-level key(s) {extra} (a workflow is a list of jobs or {{jobs: [...]}})"
        )
    if loaded is None:
        return []
    if not isinstance(loaded, list):
        raise StoreError(f"{source}: expected a YAML list of jobs (or Trellis -deps/-l/-c lines)")
    from pydantic import ValidationError

    from metasched.runtime.metaqueue.workflow_model import ENTRIES, format_errors

    try:
        entries = ENTRIES.validate_python(loaded)
    except ValidationError as exc:
        errors = exc.errors()
        line = _line_of(text, wrapped, errors[0]["loc"]) if errors else None
        where = f"{source}:{line}" if line is not None else source
        raise StoreError(f"{where}: {format_errors(exc, prefix)}") from None
    except RecursionError:
        raise StoreError(f"{source}: YAML nested too deeply") from None
    base_dir = path.resolve().parent if any(e.inputs is not None or e.outputs is not None for e in entries) else None
    try:
        return [_to_spec(e, f"jobs[{i}]", default_cwd, base_dir) for i, e in enumerate(entries)]
    except StoreError as exc:
        raise StoreError(f"{source}: {exc}") from None
