"""Places for long-running requests (apiserver/http/transport/shares.py): per user, in all, and a newcomer taking
the place of the largest holder's oldest when all are taken. Behind the real aggregator:
tests/realk8s/test_fair_shares.py."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from apiserver.auth.identity import UserInfo
from apiserver.http.errors import StatusError
from apiserver.http.keys import USER
from apiserver.http.transport.budget import caller_of, person_of
from apiserver.http.transport.shares import Shares


def shares(capacity: int, per_user: int) -> tuple[Shares, list[str]]:
    return Shares("watches", capacity, per_user, flags=("--max-watches", "--max-watches-per-user")), []


def test_a_user_over_its_cap_gets_429_naming_the_flag() -> None:
    pool, _ = shares(10, 2)
    pool.hold("alice", lambda: None)
    pool.hold("alice", lambda: None)
    with pytest.raises(StatusError) as refused:
        pool.hold("alice", lambda: None)
    assert refused.value.code == 429 and "--max-watches-per-user" in refused.value.status["message"]
    assert refused.value.headers == {"Retry-After": "1"}
    assert pool.refused == 1 and pool.held == 2
    pool.hold("bob", lambda: None)  # another user is not affected


def test_when_all_are_taken_a_newcomer_ends_the_largest_holder_s_oldest() -> None:
    pool, ended = shares(4, 4)
    for n in range(4):
        pool.hold("alice", lambda n=n: ended.append(f"alice-{n}"))  # type: ignore[misc]
    bob = pool.hold("bob", lambda: ended.append("bob"))
    assert ended == ["alice-0"] and pool.held == 4 and pool.displaced == 1
    pool.hold("carol", lambda: ended.append("carol"))
    assert ended == ["alice-0", "alice-1"]
    # alice 2, bob 1, carol 1: a fourth user takes alice's; then nobody holds two more than anyone.
    pool.hold("dave", lambda: None)
    assert ended[-1] == "alice-2" and {pool.held_by(u) for u in ("alice", "bob", "carol", "dave")} == {1}
    with pytest.raises(StatusError) as refused:
        pool.hold("erin", lambda: None)
    assert "--max-watches)" in refused.value.status["message"]
    pool.release(bob)
    pool.release(bob)  # twice gives back nothing more
    assert pool.held == 3 and pool.held_by("bob") == 0
    pool.hold("erin", lambda: None)


def test_a_holder_at_the_top_does_not_displace_its_own() -> None:
    pool, ended = shares(2, 5)
    pool.hold("alice", lambda: ended.append("a0"))
    pool.hold("alice", lambda: ended.append("a1"))
    with pytest.raises(StatusError):
        pool.hold("alice", lambda: None)
    assert ended == []


def test_minted_names_of_one_namespace_are_one_person_whose_places_a_newcomer_takes() -> None:
    """Issue 37, finding 3: one place each for 8 ServiceAccount names of ns-a filled the pool, and
    nobody held two more than a newcomer, so every other user got 429. Counted per person, ns-a holds
    8: another user takes the place of one of them, and the minted names cannot take it back."""
    pool, _ = shares(8, 100)
    ended: list[int] = []
    for n in range(8):
        pool.hold(f"user:system:serviceaccount:ns-a:sa-{n}", lambda n=n: ended.append(n), "namespace:ns-a")  # type: ignore[misc]
    assert pool.held == 8 and pool.people() == 1 and pool.users() == 8
    pool.hold("user:bob", lambda: None, "user:bob")
    assert ended == [0] and pool.held_by_person("namespace:ns-a") == 7
    carol = pool.hold("user:carol", lambda: None, "user:carol")
    assert ended == [0, 1]
    # Another name minted in ns-a (6 held against carol's and bob's 1): no place of theirs is taken.
    with pytest.raises(StatusError) as refused:
        pool.hold("user:system:serviceaccount:ns-a:sa-new", lambda: None, "namespace:ns-a")
    assert refused.value.code == 429 and "(--max-watches)" in refused.value.status["message"]
    assert ended == [0, 1] and pool.held_by("user:carol") == 1
    pool.release(carol)
    # Within one person, names are still fair to each other: the largest name holds 1, the newcomer 0.
    pool.hold("user:system:serviceaccount:ns-a:sa-new", lambda: None, "namespace:ns-a")
    assert ended == [0, 1]


def test_within_a_person_a_name_holding_two_more_gives_way() -> None:
    pool, _ = shares(3, 100)
    ended: list[int] = []
    for n in range(3):
        pool.hold("user:system:serviceaccount:ns-a:big", lambda n=n: ended.append(n), "namespace:ns-a")  # type: ignore[misc]
    pool.hold("user:system:serviceaccount:ns-a:small", lambda: None, "namespace:ns-a")
    assert ended == [0]


def test_a_person_over_the_per_user_cap_gets_429_naming_the_namespace() -> None:
    pool, _ = shares(100, 3)
    for n in range(3):
        pool.hold(f"user:system:serviceaccount:ns-a:sa-{n}", lambda: None, "namespace:ns-a")
    with pytest.raises(StatusError) as refused:
        pool.hold("user:system:serviceaccount:ns-a:sa-9", lambda: None, "namespace:ns-a")
    message = refused.value.status["message"]
    assert refused.value.code == 429 and refused.value.headers == {"Retry-After": "1"}
    assert (
        'the ServiceAccounts of namespace "ns-a" together at once: at most 3 (--max-watches-per-user)'
        in message
    )
    pool.hold("user:system:serviceaccount:ns-b:sa-0", lambda: None, "namespace:ns-b")  # another namespace


def test_a_request_draws_on_its_person_s_share() -> None:
    """What the watches, the pending bodies and the body budget count by (budget.py person_of)."""
    minted = make_mocked_request("GET", "/")
    minted[USER] = UserInfo("system:serviceaccount:ns-a:minted-7")
    alice = make_mocked_request("GET", "/")
    alice[USER] = UserInfo("alice")
    assert (caller_of(minted), person_of(minted)) == (
        "user:system:serviceaccount:ns-a:minted-7",
        "namespace:ns-a",
    )
    assert (caller_of(alice), person_of(alice)) == ("user:alice", "user:alice")
    anonymous = make_mocked_request("GET", "/")
    assert person_of(anonymous) == caller_of(anonymous) and person_of(anonymous).startswith("peer:")
