"""Bearer tokens, checked with TokenReview (authentication.k8s.io/v1) and cached briefly.

Cached by the token's SHA-256 so that the token itself is never kept as a key nor written to a log.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from apiserver.auth.cache import TTLCache
from apiserver.auth.identity import UserInfo
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


class TokenAuthenticator:
    """Asks the cluster who a token belongs to; remembers the answer (yes or no) for ``ttl`` seconds."""

    def __init__(
        self, client: ReviewClient, *, ttl: float = DEFAULT_TTL, audiences: tuple[str, ...] = ()
    ) -> None:
        self._client = client
        self._audiences = audiences
        self._cache: TTLCache[UserInfo | None] = TTLCache(lambda _value: ttl)

    async def authenticate(self, token: str) -> UserInfo | None:
        """The token's user, None when the cluster says it is not valid; :class:`ReviewError` otherwise."""
        return (await self.authenticate_until(token))[0]

    async def authenticate_until(self, token: str) -> tuple[UserInfo | None, float]:
        """``authenticate``, and until when (``time.monotonic``) the cached answer stands."""
        key = hashlib.sha256(token.encode()).digest()
        return await self._cache.get_until(key, lambda: self._review(token))

    async def _review(self, token: str) -> UserInfo | None:
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        answer = await self._client.create(TOKEN_REVIEW_PATH, body)
        status = answer.get("status")
        if not isinstance(status, dict):
            raise ReviewError("TokenReview answer has no status")
        if not status.get("authenticated"):
            log.info(
                "token %s… not authenticated: %s", token_id(token), status.get("error") or "no reason given"
            )
            return None
        user = status.get("user") or {}
        name = user.get("username") or ""
        if not name:
            log.warning("token %s… authenticated without a user name: refused", token_id(token))
            return None
        extra = user.get("extra") or {}
        return UserInfo(
            name=name,
            uid=user.get("uid") or "",
            groups=tuple(user.get("groups") or ()),
            extra={str(k): tuple(v or ()) for k, v in extra.items()},
            method="token",
        )
