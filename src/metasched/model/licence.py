"""Software licences: a type and how many copies of it may be active at once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Licence:
    """A software licence of one cluster's pool: ``copies`` may be active at the same instant.

    Source: seed 004 section 3 ("each license is described by a type and its availability").
    Licences are identified by their index in a cluster's ``licences`` tuple (the same index means
    the same licence type in every cluster).
    """

    name: str
    copies: int

    def __post_init__(self) -> None:
        if self.copies < 0:
            raise ValueError(f"licence {self.name!r}: copies must be >= 0, got {self.copies}")


def free_copies(
    site_caps: Mapping[str, int],
    global_caps: Mapping[str, int],
    active_here: Mapping[str, int],
    active_all: Mapping[str, int],
) -> dict[str, int]:
    """Copies of each licence a claim at one site may still hand out: the rule combining site and global limits.

    Source: seed 004, section 3 (licences are a resource shared by the jobs of the whole grid, a
    type and how many copies may be active at once), with the metaqueue's two places a limit comes
    from: the site's own list (``site_caps``: ``sites.licences``, the site's ``licences`` in
    ``sites.toml``) and the global table (``global_caps``: ``metasched licences set``, the
    top-level ``[licences]`` of ``sites.toml``), a pool counted across ALL sites.

    The rule, per licence name ``l``:

    * the site cap, when the site lists ``l``: ``site_caps[l] - active_here[l]``;
    * the global cap, when ``l`` is global: ``global_caps[l] - active_all[l]``;
    * free = the smaller of the caps that apply (both apply: both must hold); a licence neither
      the site nor the global table lists is not available (absent from the answer). A global
      licence is thus available at every site that does not list it, and a site that must not use
      it lists it with 0.

    ``active_*`` count the copies held by jobs handed out and not finished (running, leased),
    at this site and at every site. Never negative (a cap lowered below its use gives 0).
    Invariant: if every claim takes at most the free copies, then at every instant the copies held
    at a site stay within its cap and the copies held anywhere within the global cap.
    """
    out: dict[str, int] = {}
    for name in sorted({*site_caps, *global_caps}):
        caps = []
        if name in site_caps:
            caps.append(int(site_caps[name]) - int(active_here.get(name, 0)))
        if name in global_caps:
            caps.append(int(global_caps[name]) - int(active_all.get(name, 0)))
        out[name] = max(0, min(caps))
    return out


def held(requests: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Copies held in total by jobs requesting ``requests`` (``{name: count}`` each)."""
    out: dict[str, int] = {}
    for req in requests:
        for name, count in req.items():
            out[name] = out.get(name, 0) + int(count)
    return out
