"""Posting review objects (TokenReview, SubjectAccessReview) to the cluster."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


class _NoReviewBodies(logging.Filter):
    """kubernetes-asyncio logs response bodies at debug level; a TokenReview's echoes the token."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "tokenreview" not in record.getMessage().lower()


logging.getLogger("kubernetes_asyncio.client.rest").addFilter(_NoReviewBodies())


class ReviewError(Exception):
    """A review could not be made (API unreachable, slow, or refusing us): the server's problem, not the
    caller's, so it is answered 503 and never taken as an allow."""


class ReviewClient(Protocol):
    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``path`` and return the created object; raise :class:`ReviewError`."""


class KubeReviewClient:
    """A :class:`ReviewClient` over a kubernetes-asyncio ``ApiClient`` (the server's own credentials)."""

    def __init__(self, api_client: Any, timeout: float = 5.0) -> None:
        """``timeout`` bounds the whole call (connect, send, answer): ``--kube-timeout``."""
        self._api = api_client
        self._timeout = timeout

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            async with asyncio.timeout(self._timeout):
                result = await self._call(path, body)
        except TimeoutError as exc:
            raise ReviewError(f"POST {path}: no answer within {self._timeout:g}s") from exc
        if not isinstance(result, dict):
            raise ReviewError(f"POST {path}: the API server answered something that is not an object")
        return result

    async def _call(self, path: str, body: dict[str, Any]) -> Any:
        try:
            return await self._api.call_api(
                path,
                "POST",
                body=body,
                header_params={"Accept": "application/json", "Content-Type": "application/json"},
                response_types_map={200: "object", 201: "object"},
                auth_settings=["BearerToken"],
                _return_http_data_only=True,
                _request_timeout=self._timeout,
            )
        except (asyncio.CancelledError, TimeoutError):
            raise  # a timeout is worded by create()
        except Exception as exc:  # ApiException, connection errors
            status = getattr(exc, "status", None)
            reason = getattr(exc, "reason", None) or type(exc).__name__
            detail = f"HTTP {status} {reason}" if status else f"{reason}: {exc}"
            raise ReviewError(f"POST {path} failed: {detail}") from exc
