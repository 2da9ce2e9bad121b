"""The rule combining a site's licence limits with the global ones (hand-worked cases and a property)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from metasched.model.licence import free_copies, held


def test_site_and_global_limits_combine_by_the_smaller() -> None:
    site = {"matlab": 5, "ansys": 1, "local": 3, "banned": 0}
    glob = {"matlab": 2, "ansys": 4, "banned": 9, "floating": 3}
    here = {"matlab": 1, "ansys": 1, "local": 1}
    everywhere = {"matlab": 2, "ansys": 1, "local": 1, "floating": 1}
    assert free_copies(site, glob, here, everywhere) == {
        "ansys": 0,  # site cap 1, held 1 here (global would allow 3)
        "banned": 0,  # the site lists it with 0: never here
        "floating": 2,  # global only: available at every site that does not list it, 3 - 1
        "local": 2,  # site only: 3 - 1
        "matlab": 0,  # global 2, both held (one here, one elsewhere); site would allow 4
    }


def test_unknown_licence_is_not_available_and_overuse_gives_zero() -> None:
    assert free_copies({}, {}, {}, {}) == {}
    assert "x" not in free_copies({"a": 1}, {"b": 1}, {"x": 3}, {"x": 3})
    assert free_copies({}, {"a": 1}, {}, {"a": 3}) == {"a": 0}  # limit lowered below use


def test_held_sums_requests() -> None:
    assert held([{"a": 1}, {"a": 2, "b": 1}, {}]) == {"a": 3, "b": 1}


caps = st.dictionaries(st.sampled_from("abc"), st.integers(0, 4), max_size=3)


@given(caps, caps, st.lists(st.tuples(st.booleans(), st.dictionaries(st.sampled_from("abc"), st.integers(1, 2)))))
def test_taking_only_free_copies_keeps_every_cap(site: dict[str, int], glob: dict[str, int], asks: list) -> None:
    """Claims here (True) or elsewhere (False: global cap only) taking only free copies never exceed a cap."""
    here: dict[str, int] = {}
    everywhere: dict[str, int] = {}
    for at_site, req in asks:
        free = free_copies(site, glob, here, everywhere) if at_site else free_copies({}, glob, {}, everywhere)
        if all(free.get(n, 0) >= c for n, c in req.items()):
            for n, c in req.items():
                everywhere[n] = everywhere.get(n, 0) + c
                if at_site:
                    here[n] = here.get(n, 0) + c
    for n, c in here.items():
        assert c <= site.get(n, glob.get(n, 0))
        if n in glob:
            assert c <= glob[n]
    for n, c in everywhere.items():
        assert n in glob or n in site
        if n in glob:
            assert c <= glob[n]
