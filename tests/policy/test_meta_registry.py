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
