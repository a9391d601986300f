"""SubjectAccessReviews rationed per person (issue 37, finding 3): identities minted by the hundred (the
ServiceAccounts of one namespace, which its editors may impersonate) get 429 with Retry-After beyond
their person's share, without a review, as kube-apiserver's flow control answers; never a 503, and
never at another person's expense. Behind the real aggregator: tests/realk8s/test_fair_shares.py."""

from __future__ import annotations

from apiserver.auth.authorization import SubjectAccessReviewer
from apiserver.auth.config import TrustOptions, TrustState
from apiserver.auth.gate import AuthGate
from apiserver.auth.identity import UserInfo
from apiserver.auth.reviewlimits import ReviewLimits
from tests.auth.test_renewal import Clock, FakeAccessReviews, in_namespace


def minted(namespace: str, n: int) -> UserInfo:
    return UserInfo(
        f"system:serviceaccount:{namespace}:minted-{n}",
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


async def test_minted_identities_get_429_beyond_their_namespace_s_share_and_others_are_reviewed() -> None:
    api, clock = FakeAccessReviews(), Clock()
    api.allowed.update({"ns-a", "ns-b"})
    limits = ReviewLimits(rate=1.0, burst=3, concurrent=16, waiting=64)
    reviewer = SubjectAccessReviewer(api, allowed_ttl=10.0, denied_ttl=10.0, clock=clock, limits=limits)
    gate = AuthGate(TrustState(TrustOptions()), tokens=None, reviewer=reviewer)
    verdicts = [await gate.decide(minted("ns-a", n), in_namespace("ns-a"), rationed=True) for n in range(6)]
    assert [v.status is None for v in verdicts] == [True] * 3 + [False] * 3
    refused = verdicts[3]
    assert refused.status is not None and refused.status["code"] == 429
    assert refused.status["reason"] == "TooManyRequests" and refused.headers == {"Retry-After": "1"}
    assert refused.status["message"] == "Too many requests, please try again later."
    # Not a refusal for its credentials: the peer (through the aggregator, kube-apiserver: everyone's
    # requests) is not cut off for it, as it is for 401s and TokenReviews' 429s.
    assert not refused.credentials
    assert api.asked == ["ns-a"] * 3  # the refused ones cost kube-apiserver nothing
    # Another person (a user; the ServiceAccounts of another namespace) is reviewed as ever.
    assert (await gate.decide(UserInfo("bob"), in_namespace("ns-b"), rationed=True)).status is None
    assert (await gate.decide(minted("ns-b", 0), in_namespace("ns-b"), rationed=True)).status is None
    # An answer already cached costs no share; the bucket refills at its rate.
    assert (await gate.decide(minted("ns-a", 0), in_namespace("ns-a"), rationed=True)).status is None
    clock.now += 1.0
    assert (await gate.decide(minted("ns-a", 99), in_namespace("ns-a"), rationed=True)).status is None
    assert len(api.asked) == 6
    # The reads a rendering makes are not rationed: a refusal there would hide items of a list.
    for n in range(6):
        read = in_namespace(f"ns-read-{n}")
        refusal = (await gate.decide(minted("ns-a", 200 + n), read)).status
        assert refusal is not None and refusal["code"] == 403  # asked, and denied: not 429
    assert len(api.asked) == 12
