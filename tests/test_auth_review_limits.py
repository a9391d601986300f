"""TokenReviews bounded (issue 15, item 9): a token the cluster refused is not reviewed again for the cache
TTL; a source inventing tokens gets 429 beyond its rate, without a review, while another source's tokens
are reviewed; invented tokens never push a good one out of its cache; reviews under way are capped.

Reviews are counted at the fake API server (tests/fakekube), which records every one it receives; the
realistic flood, and its cost to a legitimate user's latency, is hack/bench_dos.py tokens.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import aiohttp
import pytest

from apiserver.auth.cache import TTLCache
from apiserver.auth.config import TrustOptions
from apiserver.auth.options import AuthOptions
from apiserver.auth.reviewlimits import ReviewLimiter, ReviewLimits, ReviewThrottled
from tests.auth_fixtures import AuthEnv, auth_env


async def call_from(env: AuthEnv, address: str, token: str, path: str = "/metrics") -> tuple[int, str | None]:
    """GET ``path`` with a bearer token from a chosen loopback address: (status, Retry-After)."""
    connector = aiohttp.TCPConnector(ssl=env.client_context(), local_addr=(address, 0))
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(env.url + path, headers={"Authorization": f"Bearer {token}"}) as resp,
    ):
        await resp.read()
        return resp.status, resp.headers.get("Retry-After")


def options(**limits: float) -> AuthOptions:
    return dataclasses.replace(
        AuthOptions(trust=TrustOptions()),
        review_limits=ReviewLimits(**limits),  # type: ignore[arg-type]
    )


async def test_a_refused_token_is_reviewed_once_within_the_ttl(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        for _ in range(3):
            assert (await call_from(env, "127.0.0.2", "garbage-token"))[0] == 401
        assert len(env.reviews.token_reviews) == 1


async def test_a_source_inventing_tokens_gets_429_without_reviews_and_others_are_reviewed(
    tmp_path: Path,
) -> None:
    async with auth_env(tmp_path, options=options(rate=0.5, burst=3)) as env:
        env.reviews.tokens["good-token"] = ("dave", ["ops"])
        env.reviews.allow(user="dave")
        answers = [await call_from(env, "127.0.0.2", f"invented-{i}") for i in range(10)]
        assert answers[:3] == [(401, None)] * 3  # its burst: reviewed, refused
        assert answers[3:] == [(429, "1")] * 7  # then no review at all
        assert len(env.reviews.token_reviews) == 3
        # Another source is reviewed as usual, and a token already known costs nothing from any source.
        assert await call_from(env, "127.0.0.3", "good-token") == (200, None)
        assert await call_from(env, "127.0.0.2", "good-token") == (200, None)
        assert await call_from(env, "127.0.0.2", "invented-0") == (401, None)  # refused, remembered
        assert len(env.reviews.token_reviews) == 4


async def test_invented_tokens_never_push_out_a_good_one(tmp_path: Path) -> None:
    """They fill the cache of refusals only: the good token is not reviewed again, and the admissions the
    gate remembers (which rest on the cache epoch) stay valid."""
    async with auth_env(tmp_path, options=options(rate=10_000, burst=10_000)) as env:
        env.reviews.tokens["good-token"] = ("dave", ["ops"])
        env.reviews.allow(user="dave")
        assert (await call_from(env, "127.0.0.3", "good-token"))[0] == 200
        epoch = TTLCache.epoch
        tokens = env.runtime.gate.tokens
        assert tokens is not None
        tokens.refused._max = 50  # a small cache of refusals, overrun below
        await asyncio.gather(*(call_from(env, "127.0.0.2", f"invented-{i}") for i in range(120)))
        assert len(tokens.refused) == 50
        assert TTLCache.epoch == epoch
        reviews = len(env.reviews.token_reviews)
        assert (await call_from(env, "127.0.0.3", "good-token"))[0] == 200
        assert len(env.reviews.token_reviews) == reviews


async def test_reviews_under_way_are_capped_and_the_queue_is_short() -> None:
    limiter = ReviewLimiter(ReviewLimits(rate=1000, burst=1000, concurrent=1, waiting=1))
    release = asyncio.Event()
    entered: list[str] = []

    async def review(name: str) -> str:
        try:
            async with limiter.review("x"):
                entered.append(name)
                await release.wait()
        except ReviewThrottled as exc:
            return f"throttled: {exc}"
        return "reviewed"

    first = asyncio.ensure_future(review("first"))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(review("second"))  # waits for the slot
    await asyncio.sleep(0)
    third = await review("third")  # nobody else may wait
    assert third == "throttled: 1 TokenReviews under way and 1 waiting"
    assert entered == ["first"]
    release.set()
    assert await asyncio.gather(first, second) == ["reviewed", "reviewed"]
    assert entered == ["first", "second"]


def test_the_bucket_refills_at_the_rate() -> None:
    now = [0.0]
    limiter = ReviewLimiter(ReviewLimits(rate=2, burst=2), clock=lambda: now[0])

    def taken(source: str) -> bool:
        return limiter._take(source)

    assert [taken("a"), taken("a"), taken("a")] == [True, True, False]
    assert taken("b")  # each source has its own
    now[0] += 0.5  # one more, at two a second
    assert [taken("a"), taken("a")] == [True, False]
    now[0] += 100  # never more than the burst
    assert [taken("a"), taken("a"), taken("a")] == [True, True, False]


@pytest.mark.parametrize(
    "flag", ["--token-review-qps=0", "--token-review-burst=0", "--max-token-reviews-in-flight=x"]
)
def test_the_flags_refuse_nonsense(flag: str) -> None:
    from apiserver.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", flag])
