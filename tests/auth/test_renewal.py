"""Review answers in use are renewed ahead (apiserver/auth/cache.py): an allow used in the last fifth of
its time is asked again in the background while it still answers, so requests never wait for its
review; nothing is served past its own time, a denial is never renewed, a failed renewal changes
nothing, a changed answer applies at once, and renewals under way are bounded.

The clock is injected and the reviews are a fake client that counts them and can be held back: a
request that had to wait for a review would not finish while the review is held."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apiserver.auth.authorization import Attributes, SubjectAccessReviewer
from apiserver.auth.cache import TTLCache
from apiserver.auth.identity import UserInfo
from apiserver.auth.reviews import ReviewError

ALICE = UserInfo("alice", groups=("dev", "system:authenticated"))


def in_namespace(ns: str) -> Attributes:
    return Attributes(
        verb="get",
        resource_request=True,
        namespace=ns,
        group="subresources.kubevirt.io",
        version="v1",
        resource="virtualmachines",
        subresource="expand-spec",
    )


class FakeAccessReviews:
    """A SubjectAccessReview API: allows or denies per namespace, counts the reviews, and answers only
    while ``open`` is set (cleared: reviews wait; ``fail``: they raise)."""

    def __init__(self) -> None:
        self.allowed: set[str] = set()
        self.asked: list[str] = []
        self.open = asyncio.Event()
        self.open.set()
        self.fail = False

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        ns = body["spec"]["resourceAttributes"]["namespace"]
        self.asked.append(ns)
        await self.open.wait()
        if self.fail:
            raise ReviewError("the cluster could not be asked")
        return {"status": {"allowed": ns in self.allowed}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def settled() -> None:
    """Let background renewals run to their end."""
    for _ in range(10):
        await asyncio.sleep(0)


@pytest.fixture
def setup() -> tuple[FakeAccessReviews, Clock, SubjectAccessReviewer]:
    api, clock = FakeAccessReviews(), Clock()
    return api, clock, SubjectAccessReviewer(api, allowed_ttl=10.0, denied_ttl=10.0, clock=clock)


async def answer_without_a_review(reviewer: SubjectAccessReviewer, api: FakeAccessReviews, ns: str) -> bool:
    """The decision, with the review API held: it must come from the cache at once."""
    api.open.clear()
    try:
        held = await asyncio.wait_for(reviewer.authorize_until(ALICE, in_namespace(ns)), 1.0)
    finally:
        api.open.set()
    return held.value.allowed


async def test_an_allow_in_use_is_renewed_ahead_so_no_request_waits_at_its_expiry(
    setup: tuple[FakeAccessReviews, Clock, SubjectAccessReviewer],
) -> None:
    api, clock, reviewer = setup
    api.allowed.add("ns-1")
    assert (await reviewer.authorize(ALICE, in_namespace("ns-1"))).allowed
    assert api.asked == ["ns-1"]
    clock.now += 5  # within its time, not near its end: answered, nothing asked
    assert await answer_without_a_review(reviewer, api, "ns-1")
    await settled()
    assert api.asked == ["ns-1"]
    clock.now += 3.5  # in the last fifth: answered at once from the allow, renewed in the background
    assert await answer_without_a_review(reviewer, api, "ns-1")
    await settled()
    assert api.asked == ["ns-1", "ns-1"]
    clock.now += 2  # past the first allow's time (10 s), within the renewed one's
    assert await answer_without_a_review(reviewer, api, "ns-1")
    held = await reviewer.authorize_until(ALICE, in_namespace("ns-1"))
    assert held.until == pytest.approx(clock.now - 2 + 10)  # the renewal's own 10 s, from when it answered
    assert reviewer.cache_figures()[2] == 2  # the renewal counts as a review asked


async def test_an_answer_is_never_served_past_its_time_when_its_renewal_fails(
    setup: tuple[FakeAccessReviews, Clock, SubjectAccessReviewer],
) -> None:
    api, clock, reviewer = setup
    api.allowed.add("ns-1")
    await reviewer.authorize(ALICE, in_namespace("ns-1"))
    api.fail = True
    clock.now += 9  # renewal starts, and fails
    assert await answer_without_a_review(reviewer, api, "ns-1")
    await settled()
    assert api.asked == ["ns-1", "ns-1"]
    clock.now += 0.5  # the old allow still stands (a renewal after it failed is tried again)
    assert await answer_without_a_review(reviewer, api, "ns-1")
    await settled()
    clock.now += 1  # its time is over: asked on the request's path, which waits for the answer
    asked = len(api.asked)
    with pytest.raises(ReviewError):
        await reviewer.authorize(ALICE, in_namespace("ns-1"))
    assert len(api.asked) == asked + 1
    api.fail = False
    api.open.clear()
    lookup = asyncio.ensure_future(reviewer.authorize(ALICE, in_namespace("ns-1")))
    await settled()
    assert not lookup.done()  # no stale allow to answer with
    api.open.set()
    assert (await lookup).allowed


async def test_a_denial_is_never_renewed(
    setup: tuple[FakeAccessReviews, Clock, SubjectAccessReviewer],
) -> None:
    api, clock, reviewer = setup
    assert not (await reviewer.authorize(ALICE, in_namespace("ns-1"))).allowed
    for _ in range(8):
        clock.now += 1.2  # used through the last part of its time
        if clock.now < 1010:
            assert not await answer_without_a_review(reviewer, api, "ns-1")
        await settled()
    assert api.asked == ["ns-1"]  # nothing asked ahead for it
    clock.now = 1010.5
    api.allowed.add("ns-1")
    assert (await reviewer.authorize(ALICE, in_namespace("ns-1"))).allowed  # asked once it expired
    assert api.asked == ["ns-1", "ns-1"]


async def test_a_renewal_that_finds_a_denial_applies_it_at_once_and_drops_the_memos(
    setup: tuple[FakeAccessReviews, Clock, SubjectAccessReviewer],
) -> None:
    api, clock, reviewer = setup
    api.allowed.add("ns-1")
    await reviewer.authorize(ALICE, in_namespace("ns-1"))
    api.allowed.clear()  # the RoleBinding is deleted
    clock.now += 9
    epoch = TTLCache.epoch
    assert await answer_without_a_review(reviewer, api, "ns-1")  # the allow, still within its time
    await settled()
    assert TTLCache.epoch != epoch  # admissions remembered on the allow go now
    assert not await answer_without_a_review(reviewer, api, "ns-1")


async def test_renewals_under_way_are_bounded_and_a_lookup_at_expiry_joins_one(
    setup: tuple[FakeAccessReviews, Clock, SubjectAccessReviewer],
) -> None:
    api, clock, reviewer = setup
    namespaces = [f"ns-{i}" for i in range(20)]
    api.allowed.update(namespaces)
    for ns in namespaces:
        await reviewer.authorize(ALICE, in_namespace(ns))
    assert len(api.asked) == 20
    clock.now += 9
    api.open.clear()  # renewals wait
    for ns in namespaces:
        assert (await reviewer.authorize(ALICE, in_namespace(ns))).allowed  # answered at once
    await settled()
    assert len(api.asked) == 20 + 8  # eight at once, no more
    clock.now += 1.5  # all expired: a lookup of one being renewed waits for that renewal, asks nothing
    lookup = asyncio.ensure_future(reviewer.authorize(ALICE, in_namespace("ns-0")))
    await settled()
    assert not lookup.done() and len(api.asked) == 28
    api.open.set()
    assert (await lookup).allowed
    assert len(api.asked) == 28
