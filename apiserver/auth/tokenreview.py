"""Bearer tokens, checked with TokenReview (authentication.k8s.io/v1) and cached briefly.

Cached by the token's SHA-256 so that the token itself is never kept as a key nor written to a log.
Tokens found good and tokens found bad are kept apart: a flood of invented tokens fills only the cache
of refusals, and never pushes out a good token (nor, through the cache epoch, every remembered
admission). Reviews not answered from either cache are bounded per source and in all
(:mod:`apiserver.auth.reviewlimits`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections import OrderedDict
from typing import Any

from apiserver.auth.cache import Held, TTLCache
from apiserver.auth.identity import UserInfo
from apiserver.auth.reviewlimits import ReviewLimiter, ReviewLimits
from apiserver.auth.reviews import TOKEN_REVIEW_PATH, ReviewClient, ReviewError

log = logging.getLogger(__name__)

DEFAULT_TTL = 10.0


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, as kube-apiserver parses it."""
    parts = authorization.strip().split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return None
    token = parts[1].strip()
    return token or None


def token_id(token: str) -> str:
    """A short, non-reversible name for a token, safe to log."""
    return hashlib.sha256(token.encode()).hexdigest()[:12]


class _Refused:
    """Tokens the cluster said no to, by digest, each for ``ttl`` seconds; the oldest go first beyond
    ``max_entries``."""

    def __init__(self, ttl: float, max_entries: int = 4096) -> None:
        self.ttl = ttl
        self._max = max_entries
        self._until: OrderedDict[bytes, float] = OrderedDict()

    def __contains__(self, key: bytes) -> bool:
        until = self._until.get(key)
        if until is None:
            return False
        if until > time.monotonic():
            return True
        del self._until[key]
        return False

    def add(self, key: bytes) -> None:
        if self.ttl <= 0:
            return
        self._until[key] = time.monotonic() + self.ttl
        self._until.move_to_end(key)
        while len(self._until) > self._max:
            self._until.popitem(last=False)

    def __len__(self) -> int:
        return len(self._until)


class TokenAuthenticator:
    """Asks the cluster who a token belongs to; remembers the answer (yes or no) for ``ttl`` seconds."""

    def __init__(
        self,
        client: ReviewClient,
        *,
        ttl: float = DEFAULT_TTL,
        audiences: tuple[str, ...] = (),
        limits: ReviewLimits | None = None,
    ) -> None:
        self._client = client
        self._audiences = audiences
        # Good tokens only: a refusal is never the basis of a remembered admission (gate.py). A good
        # token in use is renewed ahead (apiserver.auth.cache), through the same limits.
        self._cache: TTLCache[UserInfo | None] = TTLCache(
            lambda value: ttl if value is not None else 0, renew=lambda value: value is not None
        )
        self.refused = _Refused(ttl)
        self.limiter = ReviewLimiter(limits or ReviewLimits())

    async def authenticate(self, token: str, source: str = "") -> UserInfo | None:
        """The token's user, None when the cluster says it is not valid; :class:`ReviewError` otherwise
        (:class:`~apiserver.auth.reviewlimits.ReviewThrottled` when ``source`` may not have a review now)."""
        return (await self.authenticate_until(token, source)).value

    async def authenticate_until(self, token: str, source: str = "") -> Held[UserInfo | None]:
        """``authenticate``, until when (``time.monotonic``) the cached answer stands, and its renewal."""
        key = hashlib.sha256(token.encode()).digest()
        if key in self.refused:
            return Held(None, -math.inf)
        return await self._cache.get_until(key, lambda: self._review(token, key, source))

    async def _review(self, token: str, key: bytes, source: str) -> UserInfo | None:
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        async with self.limiter.review(source):
            answer = await self._client.create(TOKEN_REVIEW_PATH, body)
        status = answer.get("status")
        if not isinstance(status, dict):
            raise ReviewError("TokenReview answer has no status")
        if not status.get("authenticated"):
            log.info(
                "token %s… not authenticated: %s", token_id(token), status.get("error") or "no reason given"
            )
            self.refused.add(key)
            return None
        user = status.get("user") or {}
        name = user.get("username") or ""
        if not name:
            log.warning("token %s… authenticated without a user name: refused", token_id(token))
            self.refused.add(key)
            return None
        extra = user.get("extra") or {}
        return UserInfo(
            name=name,
            uid=user.get("uid") or "",
            groups=tuple(user.get("groups") or ()),
            extra={str(k): tuple(v or ()) for k, v in extra.items()},
            method="token",
        )
