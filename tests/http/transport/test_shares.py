"""Places for long-running requests (apiserver/http/transport/shares.py): per user, in all, and a newcomer taking
the place of the largest holder's oldest when all are taken. Behind the real aggregator:
tests/realk8s/test_fair_shares.py."""

from __future__ import annotations

import pytest

from apiserver.http.errors import StatusError
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
