"""How many reviews the server asks kube-apiserver for, and for whom.

TokenReviews: each distinct bearer token the server has not seen costs one, so without a bound anyone
who can reach the port can make it post them as fast as it answers. A flood of 8,000 garbage tokens in
10 s made 8,000 TokenReviews (all in kube-apiserver's audit log) and took a legitimate user's p95 from
15 to 422 ms.

SubjectAccessReviews: each identity the server has not seen costs one per thing it asks, and whoever may
impersonate the ServiceAccounts of a namespace (the ``edit`` role may) mints identities without end.
In issue 37's review, 500 watches opened through the aggregator as 500 ServiceAccounts that do not exist
made 500 reviews at once, and some requests got 503 "could not be authorized" meanwhile.
Only a request's own reviews are rationed (:meth:`~apiserver.auth.authorization.SubjectAccessReviewer.authorize_until`),
not the reads of its rendering, where a refusal would hide a list's items instead of saying 429.

Two bounds each, checked before a review is made (an answer already cached costs none):

- per source: a token bucket, ``rate`` reviews a second with bursts of ``burst``. For TokenReviews the
  source is the client's address; for SubjectAccessReviews it is the caller's person
  (:func:`apiserver.auth.identity.person`: a user, or all the ServiceAccounts of one namespace), since
  through the aggregator every request comes from kube-apiserver's address. A client using a handful
  of tokens or identities never meets it; one inventing them gets 429 with Retry-After for all but
  ``rate`` of them a second, without a review, as kube-apiserver's API Priority and Fairness answers a
  flow it has no room for;
- in all: at most ``concurrent`` reviews at once, and at most ``waiting`` requests waiting for one;
  beyond, 429 at once. A flood from many sources cannot queue up behind kube-apiserver either.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from apiserver.auth.reviews import ReviewError


class ReviewThrottled(ReviewError):
    """No review for this request now: the caller is answered 429 with Retry-After."""


@dataclass(frozen=True, slots=True)
class ReviewLimits:
    """``--token-review-qps``, ``--token-review-burst``, ``--max-token-reviews-in-flight`` (and the
    ``--subject-access-review-*`` flags for SubjectAccessReviews)."""

    rate: float = 10.0
    burst: int = 20
    concurrent: int = 16
    waiting: int = 64


# A request's own SubjectAccessReviews: a caller's first request of each kind in each namespace (each
# reviewed once per --authorization-webhook-cache-authorized-ttl, and renewed ahead while in use) come in
# bursts of tens at most; a person needs more than 100 at once only by inventing identities.
SUBJECT_ACCESS_REVIEW_LIMITS = ReviewLimits(rate=20.0, burst=100, concurrent=16, waiting=256)

# Sources whose buckets are remembered; beyond, the longest unused one is forgotten (its bucket full).
_MAX_SOURCES = 4096


class TokenBuckets:
    """A token bucket per source: ``rate`` a second, at most ``burst`` saved up."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # source -> (tokens, when)

    def take(self, source: str) -> bool:
        """Spend one of ``source``'s tokens; False (nothing spent) when it has none."""
        now = self._clock()
        tokens, when = self._buckets.pop(source, (self.burst, now))
        tokens = min(self.burst, tokens + (now - when) * self.rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        self._buckets[source] = (tokens, now)
        if len(self._buckets) > _MAX_SOURCES:
            self._buckets.popitem(last=False)
        return allowed


class ReviewLimiter:
    """Decides whether a review (``kind``) may be made for a source, and holds one of the slots while it
    is; ``per_source`` words what the bucket counts, for the log."""

    def __init__(
        self,
        limits: ReviewLimits,
        clock: Callable[[], float] = time.monotonic,
        *,
        kind: str = "TokenReviews",
        per_source: str = "new bearer tokens a second from",
    ) -> None:
        self.limits = limits
        self.kind = kind
        self.per_source = per_source
        self._buckets = TokenBuckets(limits.rate, limits.burst, clock)
        self._slots = asyncio.Semaphore(limits.concurrent)
        self._waiting = 0
        self.throttled = 0  # requests refused a review, for the log and tests

    def _take(self, source: str) -> bool:
        return self._buckets.take(source)

    @asynccontextmanager
    async def review(self, source: str) -> AsyncIterator[None]:
        """Hold a review slot for ``source``; :class:`ReviewThrottled` when it may not have one."""
        if not self._take(source):
            self.throttled += 1
            raise ReviewThrottled(f"more than {self.limits.rate:g} {self.per_source} {source}")
        slots = self._slots
        if slots.locked():
            if self._waiting >= self.limits.waiting:
                self.throttled += 1
                raise ReviewThrottled(
                    f"{self.limits.concurrent} {self.kind} under way and {self._waiting} waiting"
                )
            self._waiting += 1
            try:
                await slots.acquire()
            finally:
                self._waiting -= 1
        else:
            await slots.acquire()
        try:
            yield
        finally:
            slots.release()
