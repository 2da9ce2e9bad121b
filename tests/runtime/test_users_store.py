"""Users and ownership in the store (issue 36 item 1): tokens kept as hashes, names unique per owner,
another user's job is unknown (NotFound), an admin sees all."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from metasched.runtime.metaqueue.records import NotFound
from metasched.runtime.metaqueue.store import USERS, JobSpec, Store, StoreError, token_hash


def test_token_is_stored_only_as_its_hash(store: Store) -> None:
    token = store.add_user("alice")
    assert len(token) >= 32
    with store.engine.connect() as conn:
        (stored,) = conn.execute(select(USERS.c.token_hash)).one()
    assert stored == token_hash(token) != token
    assert token not in repr(store.users())
    assert store.user_for_token(token) == ("alice", "user")
    assert store.user_for_token(token + "x") is None
    store.remove_user("alice")
    assert store.user_for_token(token) is None


@pytest.mark.parametrize(
    ("name", "role", "match"),
    [
        ("9lives", "user", "bad user name"),
        ("a b", "user", "bad user name"),
        ("admin", "user", "server token"),
        ("bob", "root", "bad role"),
    ],
)
def test_bad_user_is_refused(store: Store, name: str, role: str, match: str) -> None:
    with pytest.raises(StoreError, match=match):
        store.add_user(name, role)


def test_user_twice_and_unknown_user(store: Store) -> None:
    store.add_user("alice")
    with pytest.raises(StoreError, match="exists already"):
        store.add_user("alice")
    with pytest.raises(NotFound, match="unknown user 'bob'"):
        store.remove_user("bob")


def test_names_are_unique_per_owner(store: Store) -> None:
    (a,) = store.submit([JobSpec("true", name="prep")], owner="alice")
    (b,) = store.submit([JobSpec("true", name="prep")], owner="bob")
    assert a != b
    with pytest.raises(StoreError, match="already in the metaqueue: prep"):
        store.submit([JobSpec("true", name="prep")], owner="alice")
    # each one's name means their own job
    (after,) = store.submit([JobSpec("true", name="next", after=["prep"])], owner="bob", see_all=False)
    assert store.job("next", owner="bob", see_all=False)["after"] == [b]
    assert after


def test_another_users_job_is_not_found(store: Store) -> None:
    (a,) = store.submit([JobSpec("sleep 100", name="mine")], owner="alice")
    for call in (
        lambda: store.job(str(a), owner="bob", see_all=False),
        lambda: store.job("mine", owner="bob", see_all=False),
        lambda: store.cancel([str(a)], owner="bob", see_all=False),
        lambda: store.retry([str(a)], owner="bob", see_all=False),
    ):
        with pytest.raises(NotFound, match="unknown job"):
            call()
    with pytest.raises(StoreError, match=f"unknown dependencies: {a}"):
        store.submit([JobSpec("true", after=[str(a)])], owner="bob", see_all=False)
    assert store.job(str(a))["state"] == "queued"  # nothing happened to it
    assert [j["id"] for j in store.jobs(owners=["bob"])] == []
    # the admin (see_all) reaches it by id
    assert store.cancel([str(a)]) == [a]
    assert store.users() == []


def test_old_jobs_belong_to_admin(store: Store) -> None:
    (a,) = store.submit([JobSpec("true", name="x")])
    assert store.job("x")["owner"] == "admin"
    assert store.jobs(owners=["admin"])[0]["id"] == a
