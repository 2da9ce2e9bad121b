"""The one registry of every meta-policy, named the same way everywhere: ``NAME[:key=value,...]``.

Every meta-scheduler of the package is a :class:`~metasched.policy.meta.base.MetaPolicy` (one
contract, one abstract decision method ``place``; its ``family`` says which driver asks it).
:data:`POLICIES` is the registry: each :class:`PolicyInfo` names the class, its family, its
parameters (type, default, allowed range) and its source, and :func:`parse_policy` turns
``"completion-time:k=2,choice=completion"`` into a checked :class:`PolicySpec`. The older
per-family registries (``REGISTRY``, ``SELECTOR_REGISTRY``, ``TWO_LEVEL_REGISTRY`` of
:mod:`metasched.policy.meta`) are views of it by family, and their keys stay valid names
(``selection`` is ``choice``'s other name).

Where a live claim policy of the same name exists (:data:`metasched.policy.claim.REGISTRY`),
:attr:`PolicyInfo.live` names it: ``metasched sites run --policy NAME`` reaches it.

Invariants (checked when this module is imported, and tested): every entry's family is its class's
``family``; every concrete meta-policy class of ``policy/meta`` is an entry's class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from metasched.policy.meta.base import FAMILIES, Family, MetaPolicy
from metasched.policy.meta.best_fit import BestFit
from metasched.policy.meta.cancel_slower_only import VARIANTS, CancelSlowerOnly
from metasched.policy.meta.completion_time import CompletionTime
from metasched.policy.meta.k_reservations import KReservations
from metasched.policy.meta.least_load import LeastLoad
from metasched.policy.meta.multisite import MultiSite
from metasched.policy.meta.reservations_base import SELECTIONS
from metasched.policy.meta.two_level import LoadOrdering

ORDERS: tuple[str, ...] = ("fcfs", "efficacy")
LOCALS: tuple[str, ...] = ("easy", "conservative")


class PolicyError(ValueError):
    """A policy name or parameter that cannot be used; ``key`` names it (``policy.k``)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{message}, at {key}")
        self.key = key
        self.message = message


@dataclass(frozen=True)
class Param:
    """One parameter: its type, default, a check of its range and a line of help."""

    name: str
    kind: type
    default: Any
    help: str
    check: Callable[[Any], bool] = lambda v: True
    expect: str = ""
    choices: tuple[str, ...] = ()

    def convert(self, policy: str, raw: Any) -> Any:
        key = f"{policy}.{self.name}"
        value: Any = raw
        if isinstance(raw, str):
            try:
                if self.kind is int:
                    value = int(raw)
                elif self.kind is float:
                    value = float(raw)
            except ValueError:
                raise PolicyError(key, f"{self.name} must be {self.kind.__name__}, got {raw!r}") from None
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if value is not None and not isinstance(value, self.kind):
            raise PolicyError(key, f"{self.name} must be {self.kind.__name__}, got {raw!r}")
        if self.choices and value not in self.choices:
            raise PolicyError(key, f"{self.name} must be one of {', '.join(self.choices)}, got {raw!r}")
        if value is not None and not self.check(value):
            raise PolicyError(key, f"{self.name} must be {self.expect}, got {raw!r}")
        return value

    def describe(self) -> str:
        unset = "(site)" if self.name in ("local", "order") else "none"
        text = f"{self.name}={self.default if self.default is not None else unset}"
        if self.choices:
            text += f" ({'|'.join(self.choices)})"
        elif self.expect:
            text += f" ({self.expect})"
        return text


@dataclass(frozen=True)
class PolicyInfo:
    """A registered meta-policy: ``family`` says which driver runs it; ``build`` makes the policy object
    from checked parameters (the driver-level ones, ``local``/``order``/``overhead``, are read by the driver)."""

    name: str
    family: Family
    cls: type[MetaPolicy[Any, Any]]
    summary: str
    source: str
    params: tuple[Param, ...]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    live: str | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)

    def param(self, name: str) -> Param:
        name = self.aliases.get(name, name)
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        raise PolicyError(f"{self.name}.{name}", f"policy {self.name!r} has no parameter {name!r}; known: {known}")


def _k(default: int) -> Param:
    return Param("k", int, default, "sites that get a copy of each job", lambda v: v >= 1, ">= 1")


_CHOICE = Param("choice", str, "load", "site choice: by instantaneous load or projected completion", choices=SELECTIONS)
_LOCAL = Param("local", str, None, "local scheduler at every site (default: each site's `scheduler`)", choices=LOCALS)
_ORDER = Param("order", str, None, "queue order at every site (default: each site's `order`)", choices=ORDERS)
_SEL_ALIAS = {"selection": "choice"}
_S000 = "Sabin et al. 2003 (seed 000)"


def _copies(
    name: str,
    cls: type,
    summary: str,
    section: str,
    *,
    live: str | None = None,
    order: Param = _ORDER,
    extra: tuple[Param, ...] = (),
) -> PolicyInfo:
    """A seed-000 scheme with K copies: ``k`` (default 4), ``choice``, ``local``, ``order`` (and ``extra``)."""
    params = (_k(4), _CHOICE, _LOCAL, order, *extra)
    return PolicyInfo(
        name, "reservations", cls, summary, f"{_S000}, section {section}", params, live=live, aliases=_SEL_ALIAS
    )


_ENTRIES: tuple[PolicyInfo, ...] = (
    PolicyInfo(
        "least-load",
        "reservations",
        LeastLoad,
        "greedy: each job to the site of least instantaneous load",
        f"{_S000}, section 4",
        (_k(1), _LOCAL, _ORDER),
    ),
    _copies(
        "k-reservations",
        KReservations,
        "K multiple requests, the first site able to start the job runs it (Greedy-MR)",
        "4; Subramani et al. 2002",
    ),
    _copies(
        "completion-time",
        CompletionTime,
        "K copies, a copy starts only if no other is expected to complete earlier",
        "5",
        live="completion-time",
    ),
    _copies(
        "cancel-slower-only",
        CancelSlowerOnly,
        "completion-time, cancelling only the copies at slower sites",
        "5",
        extra=(
            Param(
                "variant",
                str,
                "restart",
                "restart: a kept faster copy that completes earlier kills and restarts the job; no-kill: it never does",
                choices=VARIANTS,
            ),
        ),
    ),
    _copies(
        "efficacy",
        CompletionTime,
        "completion-time with the efficacy priority queue at every site",
        "6",
        live="efficacy",
        order=Param("order", str, "efficacy", "queue order at every site", choices=ORDERS),
    ),
    PolicyInfo(
        "best-fit",
        "selector",
        BestFit,
        "job sharing: one grid queue, EASY, each job on the machine left with the fewest free processors",
        "Ernemann et al. 2002 (seed 001), section 3.2",
        (),
    ),
    PolicyInfo(
        "multisite",
        "selector",
        MultiSite,
        "job sharing with co-allocation over several machines, split jobs run (1 + overhead) x longer",
        "Ernemann et al. 2002 (seed 001), section 3.3",
        (
            Param("overhead", float, 0.0, "run-time overhead p of a split job", lambda v: 0 <= v <= 10, "in [0, 10]"),
            Param("max_parts", int, None, "most machines a job may span", lambda v: v >= 1, ">= 1"),
        ),
    ),
    PolicyInfo(
        "load-ordering",
        "two-level",
        LoadOrdering,
        "two-level meta-scheduler: Load then Ordering heuristics; local flexible backfilling per machine",
        "Pasquali et al. 2010 (seed 004)",
        (
            Param(
                "case",
                str,
                "ms",
                "ms: MS priorities at both levels; ls: local heuristics; none: arrival order",
                choices=("ms", "ls", "none"),
            ),
        ),
        live="pasquali",
    ),
)

#: Every meta-policy by name.
POLICIES: dict[str, PolicyInfo] = {p.name: p for p in _ENTRIES}
for _p in _ENTRIES:
    if _p.family != _p.cls.family or _p.family not in FAMILIES:
        raise TypeError(f"policy {_p.name!r}: family {_p.family!r} but {_p.cls.__name__}.family is {_p.cls.family!r}")


def family_registry(family: Family) -> dict[str, type[Any]]:
    """``{class key: class}`` of the registered classes of one family (the older registries' shape)."""
    out: dict[str, type[Any]] = {}
    for p in _ENTRIES:
        if p.family == family:
            out.setdefault(p.cls.key, p.cls)
    return out


#: Other names accepted for a policy (the older registries' keys).
ALIASES: dict[str, str] = {"greedy": "least-load", "mr": "k-reservations", "load": "load-ordering"}


@dataclass(frozen=True)
class PolicySpec:
    """A policy named with checked parameters; ``label`` is how results name it (the text as given)."""

    info: PolicyInfo
    params: Mapping[str, Any]
    label: str

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def family(self) -> Family:
        return self.info.family

    def get(self, name: str) -> Any:
        return self.params.get(name)

    def build(self) -> MetaPolicy[Any, Any]:
        """The policy object (driver-level parameters left out)."""
        kwargs: dict[str, Any] = {}
        if self.info.family == "reservations":
            kwargs["k"] = self.params["k"]
            if "choice" in self.params:
                kwargs["selection"] = self.params["choice"]
            if "variant" in self.params:
                kwargs["variant"] = self.params["variant"]
        elif self.info.name == "multisite":
            kwargs["max_parts"] = self.params.get("max_parts")
        return self.info.cls(**kwargs)


def lookup_policy(name: str) -> PolicyInfo:
    """The :class:`PolicyInfo` called ``name`` (or an alias of it)."""
    key = ALIASES.get(name, name)
    try:
        return POLICIES[key]
    except KeyError:
        raise PolicyError(
            "policy", f"unknown policy {name!r}; known: {', '.join(POLICIES)} (metasched policies lists them)"
        ) from None


def parse_policy(text: str, **overrides: Any) -> PolicySpec:
    """``"NAME[:key=value,...]"`` as a checked :class:`PolicySpec` (defaults filled in).

    Raises :class:`PolicyError` naming the policy and key for an unknown name or parameter, a
    value of the wrong type or out of range (``k=0``)."""
    text = text.strip()
    name, _, rest = text.partition(":")
    info = lookup_policy(name.strip())
    given: dict[str, Any] = {}
    for item in (i.strip() for i in rest.split(",")) if rest else ():
        if not item:
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise PolicyError(f"{info.name}", f"expected key=value in {text!r}, got {item!r}")
        given[key.strip()] = value.strip()
    given.update(overrides)
    params: dict[str, Any] = {p.name: p.default for p in info.params}
    for key, value in given.items():
        p = info.param(key)
        params[p.name] = p.convert(info.name, value)
    return PolicySpec(info, params, text if rest else info.name)


def describe_policies() -> list[dict[str, str]]:
    """One row per policy: name, family, parameters, live name, summary, source (``metasched policies``)."""
    return [
        {
            "name": p.name,
            "family": p.family,
            "parameters": ", ".join(q.describe() for q in p.params),
            "live": p.live or "",
            "summary": p.summary,
            "source": p.source,
        }
        for p in _ENTRIES
    ]


def live_claim_key(name: str) -> str:
    """The live claim policy a name reaches: a meta-policy's :attr:`PolicyInfo.live` when it has
    one (``load-ordering`` -> ``pasquali``), else ``name`` as given (a claim policy's own key)."""
    info = POLICIES.get(ALIASES.get(name, name))
    return info.live if info is not None and info.live is not None else name
