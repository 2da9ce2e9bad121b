"""The TOML form of a :class:`~metasched.model.platform.Platform` (``sites.toml``), checked by pydantic.

One file serves both drivers::

    [platform]                     # optional
    name = "my-grid"
    kinds = ["bt", "lu"]           # job kinds, in application-class order (optional)

    [sites.alpha]
    procs = 128                    # or machines = [64, 64]
    speed = 1.0                    # run-time factor vs the reference machine (2.0 = twice as slow)
    scheduler = "easy"             # fcfs | easy | conservative | flexible
    order = "fcfs"                 # queue order (metasched.policy.priority)
    licences = { matlab = 4 }
    adapter = "slurm"              # live-only keys: accepted here, read by `metasched sites run`
    queue = "batch"

    [sites.beta]
    procs = 64
    speed = { default = 1.5, bt = 1.2 }   # per job kind

Keys one driver does not use are accepted and ignored by it; unknown keys are refused with their
path (``error: unknown key 'procz', at sites.alpha.procz``). :func:`json_schema` publishes the
schema (``metasched platforms --schema``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from metasched.model.platform import DEFAULT_KIND, SCHEDULERS, Platform, PlatformError, SiteSpec

#: Keys of a site table only the live side reads (``metasched sites run``; see ``runtime/manager.py``).
LIVE_KEYS: tuple[str, ...] = (
    "adapter",
    "queue",
    "cpus",
    "mem",
    "wall_time",
    "limit",
    "lower",
    "initial",
    "increase_below",
    "reduce_above",
    "extra_args",
    "setup",
    "env",
    "idle_cancel",
    "command_timeout",
    "ssh",
    "workdir",
    "python",
    "transport",
    "metaqueue_ssh",
    "tunnel_port",
    "stage_root",
    "nodes",
    "launcher",
    "pe",
    "linger",
)
#: Keys of a site table the simulator reads (``licences`` is read by both drivers).
SIM_KEYS: tuple[str, ...] = ("procs", "machines", "speed", "scheduler", "order", "licences")

Number = float | int
Licences = dict[str, int] | list[str] | str


class SiteTable(BaseModel):
    """One ``[sites.NAME]`` table. Simulation keys are typed; live keys are passed through to the live side."""

    model_config = ConfigDict(extra="forbid")

    procs: int | None = Field(default=None, gt=0, description="processors of the site")
    machines: list[int] | None = Field(default=None, description="sizes of the site's machines (sum = procs)")
    speed: Number | dict[str, Number] = Field(
        default=1.0, description="run-time factor vs the reference machine (2.0 = twice as slow), or one per job kind"
    )
    scheduler: str = Field(default="easy", description="local scheduler: " + ", ".join(SCHEDULERS))
    order: str = Field(default="fcfs", description="queue order of the local scheduler")
    licences: Licences | None = Field(default=None, description="licence copies held: { name = copies }")
    # live-only keys (metasched sites run): accepted as written, checked by the live side
    adapter: Any = Field(default=None, description="live side (metasched sites run)")
    queue: Any = Field(default=None, description="live side (metasched sites run)")
    cpus: Any = Field(default=None, description="live side (metasched sites run)")
    mem: Any = Field(default=None, description="live side (metasched sites run)")
    wall_time: Any = Field(default=None, description="live side (metasched sites run)")
    limit: Any = Field(default=None, description="live side (metasched sites run)")
    lower: Any = Field(default=None, description="live side (metasched sites run)")
    initial: Any = Field(default=None, description="live side (metasched sites run)")
    increase_below: Any = Field(default=None, description="live side (metasched sites run)")
    reduce_above: Any = Field(default=None, description="live side (metasched sites run)")
    extra_args: Any = Field(default=None, description="live side (metasched sites run)")
    setup: Any = Field(default=None, description="live side (metasched sites run)")
    env: Any = Field(default=None, description="live side (metasched sites run)")
    idle_cancel: Any = Field(default=None, description="live side (metasched sites run)")
    command_timeout: Any = Field(default=None, description="live side (metasched sites run)")
    ssh: Any = Field(default=None, description="live side (metasched sites run)")
    workdir: Any = Field(default=None, description="live side (metasched sites run)")
    python: Any = Field(default=None, description="live side (metasched sites run)")
    transport: Any = Field(default=None, description="live side (metasched sites run)")
    metaqueue_ssh: Any = Field(default=None, description="live side (metasched sites run)")
    tunnel_port: Any = Field(default=None, description="live side (metasched sites run)")
    stage_root: Any = Field(default=None, description="live side (metasched sites run)")
    nodes: Any = Field(default=None, description="live side: nodes per placeholder, cpus on each (parallel jobs)")
    launcher: Any = Field(default=None, description="live side: how parallel jobs start (srun, mpirun ...)")
    pe: Any = Field(default=None, description="live side: Grid Engine parallel environment (default smp)")
    linger: Any = Field(
        default=None,
        description="live side: how long an idle placeholder stays before it leaves (default 60s local, 0 batch)",
    )

    @field_validator("scheduler")
    @classmethod
    def _known_scheduler(cls, value: str) -> str:
        if value not in SCHEDULERS:
            raise ValueError(f"unknown local scheduler {value!r}; known: {', '.join(SCHEDULERS)}")
        return value


class PlatformTable(BaseModel):
    """The optional ``[platform]`` table."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    description: str = ""
    source: str = ""
    kinds: list[str] = Field(default_factory=list, description="job kinds, in application-class order")


class PlatformFile(BaseModel):
    """A whole ``sites.toml``."""

    model_config = ConfigDict(extra="forbid")

    platform: PlatformTable = Field(default_factory=PlatformTable)
    sites: dict[str, SiteTable] = Field(description="one [sites.NAME] table per site")
    licences: dict[str, int] | None = Field(default=None, description="grid-wide licence limits (live side)")


def json_schema() -> dict[str, Any]:
    """The JSON Schema of ``sites.toml``."""
    schema = PlatformFile.model_json_schema()
    schema["title"] = "metasched sites.toml"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def parse_licences(value: Any) -> dict[str, int]:
    """``{name: copies}`` from a mapping, a list of names, or ``"a,b:2"`` (the live side's forms)."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): int(v) for k, v in value.items()}
    items = value if isinstance(value, list) else str(value).split(",")
    out: dict[str, int] = {}
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        name, _, count = text.partition(":")
        out[name] = out.get(name, 0) + (int(count) if count else 1)
    return out


def _path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif p in {"int", "float", "str", "list[str]", "dict[str,int]", "dict[str,union[float,int]]"}:
            continue  # pydantic's union-member labels are not keys
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts)


def _first_error(exc: ValidationError) -> PlatformError:
    errors = exc.errors()
    # prefer the most specific error (the longest location)
    err = max(errors, key=lambda e: len(e["loc"])) if errors else None
    if err is None:  # pragma: no cover - pydantic always reports one
        return PlatformError("", str(exc))
    key = _path(tuple(err["loc"]))
    if err["type"] == "extra_forbidden":
        return PlatformError(key, f"unknown key {str(err['loc'][-1])!r}")
    if err["type"] == "missing":
        return PlatformError(key, "missing key")
    msg = err["msg"].removeprefix("Value error, ")
    return PlatformError(key, f"{msg} (got {err.get('input')!r})")


def check_document(data: Mapping[str, Any]) -> PlatformFile:
    """``data`` (a parsed ``sites.toml``) checked against the schema, without the simulator's
    requirements (a live-only site needs no ``procs``); :class:`PlatformError` naming the key."""
    try:
        return PlatformFile.model_validate(data)
    except ValidationError as exc:
        raise _first_error(exc) from None


def platform_from_dict(data: Mapping[str, Any], *, name: str = "platform") -> Platform:
    """The :class:`Platform` of a parsed ``sites.toml``; :class:`PlatformError` naming the key otherwise."""
    doc = check_document(data)
    if not doc.sites:
        raise PlatformError("sites", "a platform needs at least one [sites.NAME] table")
    specs = [site_spec(site_name, table) for site_name, table in doc.sites.items()]
    held = {lic for spec in specs for lic, copies in spec.licences.items() if copies > 0}
    for lic in doc.licences or {}:
        if lic not in held:
            raise PlatformError(
                f"licences.{lic}", f"no site holds licence {lic!r} (give a site licences = {{ {lic} = N }})"
            )
    return Platform(
        name=doc.platform.name or name,
        sites=tuple(specs),
        kinds=tuple(doc.platform.kinds),
        description=doc.platform.description,
        source=doc.platform.source,
    )


def site_spec(name: str, table: SiteTable | Mapping[str, Any]) -> SiteSpec:
    """One site's :class:`SiteSpec` from its table (validated here when given as a mapping)."""
    if not isinstance(table, SiteTable):
        try:
            table = SiteTable.model_validate(table)
        except ValidationError as exc:
            err = _first_error(exc)
            raise PlatformError(f"sites.{name}.{err.key}", err.message) from None
    where = f"sites.{name}"
    machines = tuple(table.machines or ())
    procs = table.procs
    if procs is None:
        if not machines:
            raise PlatformError(f"{where}.procs", "missing key (give procs or machines)")
        procs = sum(machines)
    if isinstance(table.speed, dict):
        speeds = {str(k): float(v) for k, v in table.speed.items() if k != DEFAULT_KIND}
        default = float(table.speed.get(DEFAULT_KIND, 1.0))
    else:
        speeds, default = {}, float(table.speed)
    try:
        licences = parse_licences(table.licences)
    except ValueError as exc:
        raise PlatformError(f"{where}.licences", f"bad licences ({exc})") from None
    live = {k: getattr(table, k) for k in LIVE_KEYS if getattr(table, k) is not None}
    if table.licences is not None:
        live["licences"] = table.licences
    return SiteSpec(
        name=name,
        procs=procs,
        speed=default,
        speeds=speeds,
        scheduler=table.scheduler,
        order=table.order,
        licences=licences,
        machines=machines,
        live=live,
    )


def load_platform(path: str | Path) -> Platform:
    """The platform in the TOML file ``path``; :class:`PlatformError` (naming the file and key) otherwise."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as exc:
        raise PlatformError(str(p), f"cannot read the platform description ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise PlatformError(str(p), f"invalid TOML ({exc})") from None
    try:
        return platform_from_dict(data, name=p.stem)
    except PlatformError as exc:
        raise PlatformError(f"{p}: {exc.key}", exc.message) from None


#: The papers' platforms, one TOML file each (``metasched platforms`` lists them).
PRESETS_DIR = Path(__file__).parent / "presets"


def preset_names() -> list[str]:
    """Names of the preset platforms (their files' stems), sorted."""
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def preset_path(name: str) -> Path:
    """The file of preset ``name``; :class:`PlatformError` listing the presets otherwise."""
    path = PRESETS_DIR / f"{name}.toml"
    if not path.is_file():
        raise PlatformError("--platform", f"unknown platform {name!r}; known: {', '.join(preset_names())}")
    return path


def load_preset(name: str) -> Platform:
    """The preset platform called ``name``."""
    return load_platform(preset_path(name))


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_value(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")


def to_toml(platform: Platform) -> str:
    """``platform`` as a ``sites.toml`` text (:func:`platform_from_dict` of it gives it back)."""
    lines = ["[platform]", f"name = {_toml_value(platform.name)}"]
    if platform.description:
        lines.append(f"description = {_toml_value(platform.description)}")
    if platform.source:
        lines.append(f"source = {_toml_value(platform.source)}")
    if platform.kinds:
        lines.append(f"kinds = {_toml_value(list(platform.kinds))}")
    for s in platform.sites:
        lines += ["", f"[sites.{_toml_value(s.name)}]", f"procs = {s.procs}"]
        if s.machines:
            lines.append(f"machines = {_toml_value(list(s.machines))}")
        speed: Any = {DEFAULT_KIND: s.speed, **s.speeds} if s.speeds else s.speed
        lines += [f"speed = {_toml_value(speed)}", f"scheduler = {_toml_value(s.scheduler)}"]
        lines.append(f"order = {_toml_value(s.order)}")
        for key, value in s.live.items():
            lines.append(f"{key} = {_toml_value(value)}")
        if s.licences and "licences" not in s.live:
            lines.append(f"licences = {_toml_value(dict(s.licences))}")
    return "\n".join(lines) + "\n"
