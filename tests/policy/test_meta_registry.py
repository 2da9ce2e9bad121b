"""One registry of meta-policies: every class reachable, NAME:key=value parsed and checked."""

from __future__ import annotations

import pytest

from metasched.policy.claim import REGISTRY as CLAIM_REGISTRY
from metasched.policy.meta import REGISTRY, SELECTOR_REGISTRY, TWO_LEVEL_REGISTRY
from metasched.policy.meta.completion_time import CompletionTime
from metasched.policy.meta.registry import POLICIES, PolicyError, describe_policies, parse_policy


def test_every_meta_scheduler_class_is_in_the_one_registry() -> None:
    classes = {info.cls for info in POLICIES.values()}
    for registry in (REGISTRY, SELECTOR_REGISTRY, TWO_LEVEL_REGISTRY):
        for key, cls in registry.items():
            assert cls in classes, key
            assert key in POLICIES  # the old keys stay valid names


def test_live_names_are_live_claim_policies() -> None:
    for info in POLICIES.values():
        if info.live is not None:
            assert info.live in CLAIM_REGISTRY
    assert POLICIES["completion-time"].live == "completion-time"


def test_parse_fills_defaults_and_converts() -> None:
    spec = parse_policy("completion-time:k=2,choice=completion")
    assert spec.params == {"k": 2, "choice": "completion", "local": None, "order": None}
    built = spec.build()
    assert isinstance(built, CompletionTime) and built.k == 2 and built.selection == "completion"
    # today's key `selection` is still accepted
    assert parse_policy("completion-time:k=2,selection=completion").params == spec.params
    assert parse_policy("least-load").build().k == 1
    assert parse_policy("multisite:overhead=0.3").params["overhead"] == 0.3
    assert parse_policy("efficacy").params["order"] == "efficacy"


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ("k-reservations:k=0", "k-reservations.k", ">= 1"),
        ("k-reservations:k=two", "k-reservations.k", "must be int"),
        ("completion-time:choice=fast", "completion-time.choice", "one of load, completion"),
        ("least-load:z=1", "least-load.z", "no parameter 'z'"),
        ("multisite:overhead=-1", "multisite.overhead", "in [0, 10]"),
        ("nope", "policy", "unknown policy 'nope'"),
        ("least-load:k", "least-load", "expected key=value"),
    ],
)
def test_bad_policies_get_one_error_naming_the_key(text: str, key: str, words: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(text)
    assert info.value.key == key and words in str(info.value)


def test_listing_has_every_policy_with_parameters_and_source() -> None:
    rows = describe_policies()
    assert [r["name"] for r in rows] == list(POLICIES)
    assert all(r["source"] for r in rows)
    assert "k=4" in next(r for r in rows if r["name"] == "k-reservations")["parameters"]


def test_meta_policy_names_reach_their_live_claim_policy() -> None:
    from metasched.cli.live import claim_policy
    from metasched.policy.meta.registry import live_claim_key

    assert live_claim_key("load-ordering") == "pasquali" and live_claim_key("efficacy") == "efficacy"
    assert live_claim_key("min-min") == "min-min"
    assert type(claim_policy("load-ordering")) is CLAIM_REGISTRY["pasquali"]


def test_every_meta_policy_of_the_package_is_registered_under_the_one_contract() -> None:
    """Each module of ``policy/meta``: every concrete meta-policy class it defines is a registered
    class, and every module but the contract, adapters and registry defines one."""
    import importlib
    import inspect
    import pkgutil

    import metasched.policy.meta as meta
    from metasched.policy.meta.base import MetaPolicy, is_meta_policy

    support = {"base", "registry", "reservations_base", "two_level_base"}
    registered = {info.cls for info in POLICIES.values()}
    for mod in pkgutil.iter_modules(meta.__path__):
        module = importlib.import_module(f"{meta.__name__}.{mod.name}")
        own = [c for _, c in inspect.getmembers(module, is_meta_policy) if c.__module__ == module.__name__]
        for cls in own:
            assert cls in registered, f"{module.__name__}.{cls.__name__} is not in POLICIES"
        if mod.name not in support:
            assert own, f"{module.__name__} defines no meta-policy"
    for info in POLICIES.values():
        assert issubclass(info.cls, MetaPolicy) and info.cls.family == info.family


def test_a_user_meta_policy_implements_place_only() -> None:
    """One abstract method: a subclass of a family's adapter that implements ``place`` is complete
    and the driver's call reaches it; the adapters themselves stay abstract."""
    from metasched.model.job import Job
    from metasched.policy.meta import MachineSelector, MetaScheduler, MetaSiteView, TwoLevelDispatcher
    from metasched.policy.meta.base import CopySites, StartNow, is_meta_policy

    assert not any(is_meta_policy(c) for c in (MachineSelector, MetaScheduler, TwoLevelDispatcher))

    class LastSite(MetaScheduler):
        key = "last-site"

        def place(self, question: CopySites) -> list[int]:
            return [question.views[-1].index]

    class Nowhere(MachineSelector):
        key = "nowhere"

        def place(self, question: StartNow) -> None:
            return None

    views = [MetaSiteView(i, f"s{i}", 4, 0.0, 1.0) for i in range(3)]
    assert LastSite().select_sites(Job(1, 0.0, 1.0, 1.0, 1), views, 0.0) == [2]
    assert Nowhere().select(1, [4], [4]) is None and not Nowhere().can_ever_run(1, [4])
