"""The front layer, outermost around every request: access log and metrics, Status conversion, deadline.

One layer instead of three: each costs a coroutine and a call per request, a sizeable share of a
request answered from the response cache. Its order is the one three middlewares would have: the
timeout innermost, then errors become Statuses, then the answer is counted and logged under the route's
template. The timeout is kept by :class:`~apiserver.http.transport.deadlines.Deadlines` (one sweeper,
not a timer per request).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from typing import NamedTuple

from aiohttp import web
from aiohttp.typedefs import Handler

from apiserver.http.errors import StatusError, from_http_exception, internal_error, status_response
from apiserver.http.keys import DEADLINE, USER
from apiserver.http.logging import log_request
from apiserver.http.media import prettify
from apiserver.http.metrics import Metrics
from apiserver.http.settings import Settings
from apiserver.http.transport.deadlines import Deadlines
from apiserver.render.kubernetes.errors import status

_log = logging.getLogger(__name__)


class FrontLayer(NamedTuple):
    """``serve(request, handler, template)`` runs ``handler`` inside the layer; ``note(request, code,
    template, seconds)`` counts and logs an answer given without it (answered at once, nothing awaited)."""

    serve: Callable[[web.Request, Handler, str], Awaitable[web.StreamResponse]]
    note: Callable[[web.Request, int, str, float], None]


def front_layer(
    settings: Settings,
    metrics: Metrics,
    deadlines: Deadlines,
    *,
    identified: bool,
    routine: Collection[str] = (),
) -> FrontLayer:
    """``identified``: a filter may leave the caller on the request (``keys.USER``); without one there
    is nothing to look up. ``routine``: the route templates whose successful answers are logged at
    debug level only (probes, discovery, OpenAPI: see :func:`apiserver.http.app.build_app`)."""
    limit = settings.request_timeout
    retry = max(1, int(limit))
    max_body = settings.max_body_bytes
    clock = time.perf_counter
    started, observe = metrics.started, metrics.observe
    register = deadlines.start

    def timed_out() -> StatusError:
        message = f"Timeout: request did not complete within {limit:g}s"
        body = status(504, "Timeout", message, details={"retryAfterSeconds": retry})
        return StatusError(body, {"Retry-After": str(retry)})

    async def serve(request: web.Request, handler: Handler, endpoint: str) -> web.StreamResponse:
        start = clock()
        started()
        code = 500
        deadline = register()
        if deadline is not None:
            request[DEADLINE] = deadline
        try:
            try:
                try:
                    response = await handler(request)
                except asyncio.CancelledError:
                    if deadline is None or not deadline.finish():
                        raise
                    raise timed_out() from None
                except TimeoutError:  # a timeout of the handler's own is answered as ours
                    raise timed_out() from None
                if deadline is not None:
                    deadline.finish()
            except StatusError as err:
                response = status_response(err)
            except web.HTTPException as exc:
                if exc.status < 400:  # redirects and 304s raised by handlers pass through as they are
                    response = web.Response(status=exc.status, headers=exc.headers)
                else:
                    response = status_response(from_http_exception(exc, max_body))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.exception("unexpected error serving %s %s", request.method, request.path)
                response = status_response(internal_error(f"{type(exc).__name__}: {exc}"))
            prettify(request, response)
            code = response.status
            return response
        finally:
            if deadline is not None and not deadline.done:  # left by an exception from the handler
                deadline.finish()
            elapsed = clock() - start
            observe(endpoint, request.method, code, elapsed)
            log_request(
                request,
                code,
                elapsed,
                request.get(USER) if identified else None,
                debug=code < 400 and endpoint in routine,
            )

    def note(request: web.Request, code: int, endpoint: str, seconds: float) -> None:
        started()
        observe(endpoint, request.method, code, seconds)
        log_request(request, code, seconds, request.get(USER) if identified else None)

    return FrontLayer(serve, note)
