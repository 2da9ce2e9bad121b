"""One platform description: the sites of a grid, read by the simulator and by the live side alike.

A :class:`SiteSpec` says everything a driver needs of one site: its processors (or the sizes of
its machines), its relative speed (one run-time factor against the reference machine, as
:class:`~metasched.model.site.Site` defines it: 2.0 = twice as slow; or factors per job kind),
the licences it holds, its local scheduler and queue order. The keys only the live side uses
(adapter, queue, wall time, throttle, setup, ...) travel in :attr:`SiteSpec.live`, untouched.
A :class:`Platform` is the named, ordered list of sites plus the job kinds its speed tables name.

The TOML form (``[sites.NAME]`` tables, see :mod:`metasched.model.platform_file`) is validated by
pydantic there; this module holds the plain, frozen description and its invariants, so a driver
never sees an unchecked site. Pure data: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from metasched.model.grid import Cluster, Machine
from metasched.model.licence import Licence
from metasched.model.machines import MachineConfig
from metasched.model.site import Site

#: Local schedulers a site may name (the keys of :data:`metasched.policy.local.REGISTRY`).
SCHEDULERS: tuple[str, ...] = ("fcfs", "easy", "conservative", "flexible")
#: The key of a speed table that applies to kinds it does not list.
DEFAULT_KIND = "default"


class PlatformError(ValueError):
    """A description that cannot be a platform; ``key`` is the dotted path of the bad key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{message}, at {key}")
        self.key = key
        self.message = message


@dataclass(frozen=True)
class SiteSpec:
    """One site, described once.

    ``procs`` is the site's processor count; ``machines`` (optional) its machines' sizes, which
    then sum to ``procs``. ``speed`` is the run-time factor for kinds ``speeds`` does not list;
    ``speeds`` maps a job kind to its factor here. ``licences`` maps a licence name to the copies
    the site holds. ``scheduler`` and ``order`` name the local scheduler and its queue order.
    ``live`` holds the keys only the live driver reads (kept as written).

    Invariants (checked here, each error naming its key): ``procs > 0``; every factor finite and
    positive; machine sizes positive and summing to ``procs``; licence counts >= 0.
    """

    name: str
    procs: int
    speed: float = 1.0
    speeds: Mapping[str, float] = field(default_factory=dict)
    scheduler: str = "easy"
    order: str = "fcfs"
    licences: Mapping[str, int] = field(default_factory=dict)
    machines: tuple[int, ...] = ()
    live: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"sites.{self.name}"
        if not self.name:
            raise PlatformError("sites", "a site needs a name")
        if isinstance(self.procs, bool) or not isinstance(self.procs, int) or self.procs <= 0:
            raise PlatformError(f"{where}.procs", f"processors must be a positive integer, got {self.procs!r}")
        _check_factor(f"{where}.speed", self.speed)
        for kind, factor in self.speeds.items():
            _check_factor(f"{where}.speed.{kind}", factor)
        if self.machines:
            for i, size in enumerate(self.machines):
                if size <= 0:
                    raise PlatformError(f"{where}.machines[{i}]", f"machine sizes must be positive, got {size}")
            if sum(self.machines) != self.procs:
                raise PlatformError(
                    f"{where}.machines", f"machine sizes sum to {sum(self.machines)}, but procs is {self.procs}"
                )
        for lic, copies in self.licences.items():
            if copies < 0:
                raise PlatformError(f"{where}.licences.{lic}", f"licence copies must be >= 0, got {copies}")

    def factor(self, kind: str | None) -> float:
        """Run time here / run time on the reference machine for a job of ``kind`` (``None``: no kind)."""
        if kind is None:
            return self.speed
        return self.speeds.get(kind, self.speed)

    def to_site(self, kinds: Sequence[str] = ()) -> Site:
        """The simulator's :class:`Site`, kind ``kinds[c]`` being application class ``c``."""
        return Site(
            name=self.name,
            procs=self.procs,
            speed={c: float(self.speeds[k]) for c, k in enumerate(kinds) if k in self.speeds},
            default_speed=float(self.speed),
        )

    def to_cluster(self, licence_names: Sequence[str] = ()) -> Cluster:
        """Seed 004's :class:`Cluster`: the site's machines (one of ``procs`` processors when it lists
        none) of benchmark ``1 / speed``, each running every licence the site holds; the pool has
        ``licences[name]`` copies of each of ``licence_names`` (licence ``i`` = ``licence_names[i]``)."""
        held = frozenset(i for i, n in enumerate(licence_names) if self.licences.get(n, 0) > 0)
        sizes = self.machines or (self.procs,)
        machines = tuple(Machine(f"{self.name}-{m}", size, 1.0 / self.speed, held) for m, size in enumerate(sizes))
        return Cluster(self.name, machines, tuple(Licence(n, self.licences.get(n, 0)) for n in licence_names))


@dataclass(frozen=True)
class Platform:
    """A named grid of sites, in order (a site's index is its place here).

    ``kinds`` lists the job kinds, in application-class order: kind ``kinds[c]`` is class ``c``.
    It holds at least every kind a site's speed table names (kinds named nowhere run at each
    site's default ``speed``). ``description`` and ``source`` are free text (the paper, for presets).

    Invariants: at least one site; site names distinct.
    """

    name: str
    sites: tuple[SiteSpec, ...]
    kinds: tuple[str, ...] = ()
    description: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if not self.sites:
            raise PlatformError("sites", "a platform needs at least one [sites.NAME] table")
        seen: set[str] = set()
        for s in self.sites:
            if s.name in seen:
                raise PlatformError(f"sites.{s.name}", "site names must be distinct")
            seen.add(s.name)
        named = [k for s in self.sites for k in s.speeds if k not in self.kinds]
        if named:
            extra = tuple(dict.fromkeys(named))
            object.__setattr__(self, "kinds", (*self.kinds, *extra))

    @property
    def total_procs(self) -> int:
        return sum(s.procs for s in self.sites)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sites]

    def index(self, name: str) -> int:
        """The index of the site called ``name``."""
        for i, s in enumerate(self.sites):
            if s.name == name:
                return i
        raise KeyError(f"no site {name!r}; sites: {', '.join(self.names)}")

    def to_sites(self) -> list[Site]:
        """The simulator's sites, kinds mapped to application classes by :attr:`kinds`."""
        return [s.to_site(self.kinds) for s in self.sites]

    def with_procs(self, procs: int) -> Platform:
        """The same platform with every site holding ``procs`` processors (machine lists dropped)."""
        sites = tuple(replace(s, procs=procs, machines=()) for s in self.sites)
        return replace(self, sites=sites)

    def licence_names(self) -> list[str]:
        """Every licence some site holds, in first-seen order."""
        return list(dict.fromkeys(lic for s in self.sites for lic in s.licences))

    @classmethod
    def from_toml(cls, path: Any) -> Platform:
        """The platform described by the TOML file at ``path`` (see :mod:`metasched.model.platform_file`)."""
        from metasched.model.platform_file import load_platform

        return load_platform(path)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, name: str = "platform") -> Platform:
        """The platform described by ``data`` (a parsed TOML document)."""
        from metasched.model.platform_file import platform_from_dict

        return platform_from_dict(data, name=name)

    @classmethod
    def from_machine_config(cls, config: MachineConfig, *, scheduler: str = "easy") -> Platform:
        """Seed 001's machine configuration: one site ``m<i>`` per machine, all of speed 1."""
        sites = tuple(SiteSpec(name=f"m{i}", procs=size, scheduler=scheduler) for i, size in enumerate(config.sizes))
        return cls(name=f"ernemann2002-{config.key}", sites=sites)

    def to_clusters(self) -> list[Cluster]:
        """Seed 004's clusters of the sites (:meth:`SiteSpec.to_cluster`), licences numbered by
        :meth:`licence_names`."""
        names = self.licence_names()
        return [s.to_cluster(names) for s in self.sites]

    @classmethod
    def from_sites(cls, sites: Sequence[Site], *, name: str = "platform", kinds: Sequence[str] = ()) -> Platform:
        """A platform from the simulator's :class:`Site` objects (application class ``c`` = kind ``kinds[c]``,
        or ``"c<c>"`` past them)."""
        names = list(kinds)
        specs = []
        for s in sites:
            speeds = {}
            for c, factor in sorted(s.speed.items()):
                while len(names) <= c:
                    names.append(f"c{len(names)}")
                speeds[names[c]] = factor
            specs.append(SiteSpec(name=s.name, procs=s.procs, speed=s.default_speed, speeds=speeds))
        return cls(name=name, sites=tuple(specs), kinds=tuple(names))


def _check_factor(key: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0 < value < float("inf")):
        raise PlatformError(key, f"a speed factor must be a positive finite number, got {value!r}")
