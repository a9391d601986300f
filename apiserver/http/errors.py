"""Kubernetes ``Status`` responses: every error the server sends, whatever raised it, is one of these.

Handlers raise :class:`StatusError`; the error middleware (``app.py``) turns it, aiohttp's own HTTP
exceptions (unknown path, wrong method, body too large) and any unexpected exception into a JSON
``Status`` body, so clients never see aiohttp's plain-text pages or a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from apiserver.render.kubernetes.errors import bound_status, status

JSON = "application/json"


class StatusError(Exception):
    """Answer the request with ``status`` (a Status dict) and optional extra headers; ``close``: and
    close the connection (the request body was not read, and is not worth reading to keep it)."""

    def __init__(
        self, status_body: Mapping[str, Any], headers: Mapping[str, str] | None = None, *, close: bool = False
    ) -> None:
        self.status: dict[str, Any] = bound_status(dict(status_body))
        self.headers: dict[str, str] = dict(headers or {})
        self.close = close
        super().__init__(self.status.get("message", ""))

    @property
    def code(self) -> int:
        return int(self.status.get("code", 500))


def bad_request(message: str) -> StatusError:
    return StatusError(status(400, "BadRequest", message))


def not_found(message: str = "the server could not find the requested resource") -> StatusError:
    return StatusError(status(404, "NotFound", message))


def method_not_allowed(allowed: set[str] | frozenset[str]) -> StatusError:
    allow = ", ".join(sorted(allowed))
    return StatusError(
        status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"),
        {"Allow": allow} if allow else None,
    )


def not_acceptable(accepted: tuple[str, ...]) -> StatusError:
    return StatusError(
        status(
            406,
            "NotAcceptable",
            "only the following media types are accepted: " + ", ".join(accepted),
        )
    )


def unsupported_media_type(content_type: str, accepted: tuple[str, ...]) -> StatusError:
    return StatusError(
        status(
            415,
            "UnsupportedMediaType",
            f'the body of the request was in an unknown format "{content_type}" - accepted media types '
            "include: " + ", ".join(accepted),
        )
    )


def unsupported_encoding(encoding: str) -> StatusError:
    shown = encoding if len(encoding) <= 64 else encoding[:61] + "..."
    return StatusError(
        status(
            415,
            "UnsupportedMediaType",
            f'the body of the request was encoded with "{shown}"; only unencoded bodies '
            '(no Content-Encoding, or "identity") are accepted',
        )
    )


def too_large(limit: int) -> StatusError:
    return StatusError(status(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}"))


def unavailable(message: str, *, timeout: bool, retry_after: int) -> StatusError:
    """503 ServiceUnavailable or 504 Timeout, with ``Retry-After`` in the header and the details."""
    code, reason = (504, "Timeout") if timeout else (503, "ServiceUnavailable")
    body = status(code, reason, message, details={"retryAfterSeconds": retry_after})
    return StatusError(body, {"Retry-After": str(retry_after)})


def internal_error(message: str) -> StatusError:
    return StatusError(status(500, "InternalError", f"Internal error occurred: {message}"))


def status_response(error: StatusError) -> web.Response:
    """The JSON response for ``error`` (errors are always JSON, whatever the client accepts)."""
    response = web.Response(
        status=error.code,
        body=orjson.dumps(error.status),
        content_type=JSON,
        headers=error.headers,
    )
    if error.close:
        response.force_close()
    return response


def from_http_exception(exc: web.HTTPException, max_body: int) -> StatusError:
    """Re-express one of aiohttp's own HTTP errors as a Status."""
    if isinstance(exc, web.HTTPMethodNotAllowed):
        return method_not_allowed(exc.allowed_methods)
    if isinstance(exc, web.HTTPNotFound):
        return not_found()
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return too_large(max_body)
    reason = "".join(word for word in exc.reason.title().split() if word.isalnum())
    return StatusError(status(exc.status, reason or "Unknown", exc.text or exc.reason))
