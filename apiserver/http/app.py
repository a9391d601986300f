"""The aiohttp application: routes, middlewares, shared state, and the source's lifecycle.

Middlewares run outermost first: one for access log and metrics (so every answer is counted, errors
too), Status conversion (so every error is a JSON ``Status``) and the per-request timeout; then
whatever the caller adds (authentication and authorization) and the handler. The expand endpoints run
through the same layers from :class:`~apiserver.http.dispatch.Dispatcher`, ahead of the router, once
the server installs it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Collection, Iterable
from typing import cast

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from apiserver.http.dispatch import Admission, Dispatcher, FrontLayer
from apiserver.http.endpoints import discovery, expand, expandedvms, health, openapi, version
from apiserver.http.errors import StatusError, from_http_exception, internal_error, status_response, too_large
from apiserver.http.filters.scoping import open_scoping
from apiserver.http.logging import USER_KEY, log_request
from apiserver.http.media import prettify
from apiserver.http.metrics import CONTENT_TYPE, Metrics
from apiserver.http.settings import Settings
from apiserver.http.transport.deadlines import Deadlines
from apiserver.http.transport.shares import Shares, export_shares
from apiserver.render.kubernetes.errors import status
from apiserver.sources.base import Check, Source

SETTINGS = web.AppKey("settings", Settings)
SOURCE = web.AppKey("source", Source)
METRICS = web.AppKey("metrics", Metrics)
STATE = web.AppKey("state", health.ServerState)
# The server's request handler wraps the application's with it (server.py).
DISPATCHER = web.AppKey("dispatcher", Dispatcher)
FRONT = web.AppKey("front", FrontLayer)
# What /readyz checks beyond the server's own state (the source's checks and the caller's).
READINESS: web.AppKey[health.ChecksFn] = web.AppKey("readiness")

_log = logging.getLogger(__name__)


def _endpoint(request: web.Request) -> str:
    """The route template of a request, or ``other``, so metric labels stay few."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "other"


def _front(
    settings: Settings,
    metrics: Metrics,
    deadlines: Deadlines,
    *,
    identified: bool,
    routine: Collection[str] = (),
) -> FrontLayer:
    """Access log and metrics, Status conversion and the request timeout around a handler, in one layer.

    One layer instead of three: each costs a coroutine and a call per request, a sizeable share of a
    request answered from the response cache. Order as three middlewares would have it: the timeout
    innermost, then errors become Statuses, then the answer is counted and logged under ``endpoint``
    (a route template). The timeout is kept by :class:`~apiserver.http.transport.deadlines.Deadlines` (one
    sweeper, not a timer per request). ``identified``: a middleware may leave the caller on the
    request (``USER_KEY``); without one there is nothing to look up. The layer's ``note`` counts and
    logs an answer given without it (the dispatcher's answers that await nothing). ``routine``: the
    endpoints whose successful answers are logged at debug level only (see :func:`build_app`).
    """
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

    async def front(request: web.Request, handler: Handler, endpoint: str) -> web.StreamResponse:
        start = clock()
        started()
        code = 500
        deadline = register()
        if deadline is not None:
            request[expandedvms.DEADLINE] = deadline
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
                request.get(USER_KEY) if identified else None,
                debug=code < 400 and endpoint in routine,
            )

    def note(request: web.Request, code: int, endpoint: str, seconds: float) -> None:
        started()
        observe(endpoint, request.method, code, seconds)
        log_request(request, code, seconds, request.get(USER_KEY) if identified else None)

    return FrontLayer(front, note)


def _as_middleware(front: FrontLayer) -> Middleware:
    """The front layer for requests aiohttp routes, labelled with the route they matched."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        return await front.serve(request, handler, _endpoint(request))

    return middleware


def build_app(
    settings: Settings,
    source: Source,
    *,
    middlewares: Iterable[Middleware] = (),
    admission: Admission | None = None,
    metrics: Metrics | None = None,
    state: health.ServerState | None = None,
    checks: Iterable[health.ChecksFn] = (),
) -> web.Application:
    """The whole HTTP API over ``source``; the app starts and closes the source with itself.

    ``middlewares`` run inside the error handling (so their failures become Statuses) and before
    the handlers: the place for authentication and authorization. ``admission``: their synchronous
    shortcut (see :mod:`apiserver.http.dispatch`); with middlewares and without it, every expand
    request runs through them.
    """
    metrics = metrics or Metrics()
    state = state or health.ServerState()
    metrics.watch_source(source)
    deadlines = Deadlines(settings.request_timeout)
    middlewares = tuple(middlewares)
    authenticated = bool(middlewares)
    if not authenticated:  # every request still gets the scope of its path (apiserver.http.filters.scoping)
        scoping, admission = open_scoping()
        middlewares = (scoping,)
    # Filled below with the endpoints that are not the expand API (see the comment there).
    routine: set[str] = set()
    front = _front(settings, metrics, deadlines, identified=authenticated, routine=routine)
    app = web.Application(
        middlewares=[_as_middleware(front), *middlewares], client_max_size=settings.max_body_bytes
    )
    app[SETTINGS] = settings
    app[SOURCE] = source
    app[METRICS] = metrics
    app[STATE] = state

    async def source_lifecycle(_app: web.Application) -> AsyncIterator[None]:
        await source.start()
        yield
        await source.close()

    async def on_shutdown(_app: web.Application) -> None:
        state.shutting_down = True

    async def on_cleanup(_app: web.Application) -> None:
        deadlines.close()

    app.cleanup_ctx.append(source_lifecycle)
    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)

    async def metrics_handler(_request: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})

    expand_routes = expand.add_routes(app, settings, source, metrics)
    app[DISPATCHER] = Dispatcher(expand_routes, front, middlewares, admission=admission)
    app[FRONT] = front
    store = getattr(source, "collection", None)
    watches = Shares(
        "watches",
        settings.watch_places,
        settings.max_watches_per_user,
        flags=("--max-watches", "--max-watches-per-user"),
    )
    export_shares(metrics, "watches", watches)
    expandedvms.add_routes(app, expandedvms.CollectionHandlers(store, metrics, watches))
    expand_api = {resource.canonical for resource in app.router.resources()}
    discovery.add_routes(app, settings, collection=store is not None)
    openapi.add_routes(app, settings, collection=store is not None)
    version.add_routes(app)
    extra_checks = tuple(checks)  # readiness beyond the source's (authentication's trust settings)

    def readiness() -> list[Check]:
        return [*source.checks(), *(c for fn in extra_checks for c in fn())]

    app[READINESS] = readiness
    # With authentication, the checks' messages only for authenticated callers (health.py).
    details = _authenticated if authenticated else health.always
    health.add_routes(app, state, readiness, details=details)
    app.router.add_get("/metrics", metrics_handler)
    # Behind a real aggregator most requests are its own and the kubelet's: availability probes (five
    # at a time per APIService, every 30 s), discovery and OpenAPI polls every minute, readiness and
    # liveness probes; about 40 lines a minute on an idle server. Their successful answers go to the
    # access log at debug level, so the info level shows the users' requests and every failure.
    routine.update(resource.canonical for resource in app.router.resources())
    routine.difference_update(expand_api)
    return app


def _authenticated(request: web.Request) -> bool:
    return request.get(USER_KEY) is not None


def build_probe_app(app: web.Application) -> web.Application:
    """The health endpoints of ``app`` alone, for a listener of the kubelet's probes: the same checks,
    never their messages (nothing is authenticated there), each answer in the access log as on the API
    port (successes at debug level)."""
    probes = web.Application(middlewares=[_probe_log])
    health.add_routes(probes, app[STATE], app[READINESS], details=health.never)
    return probes


@web.middleware
async def _probe_log(request: web.Request, handler: Handler) -> web.StreamResponse:
    start = time.perf_counter()
    code = 500
    try:
        response = await handler(request)
        code = response.status
        return response
    except web.HTTPException as exc:
        code = exc.status
        raise
    finally:
        log_request(request, code, time.perf_counter() - start, None, debug=code < 400)


def install_dispatcher(runner: web.AppRunner) -> None:
    """Answer the expand endpoints from the app's :class:`~apiserver.http.dispatch.Dispatcher`, ahead
    of aiohttp's router, on connections accepted from now on (each takes the low-level server's
    ``request_handler`` when it opens). Call between ``runner.setup()`` and starting a site."""
    server = runner.server
    if server is None:
        raise RuntimeError("install_dispatcher needs a runner that has been set up")
    server.request_handler = runner.app[DISPATCHER].wrap(server.request_handler)


def _expectation_error(request: web.BaseRequest, expect: str, max_body: int) -> StatusError | None:
    """What an ``Expect`` header gets instead of aiohttp's answer, or None to let aiohttp answer it
    (``100 Continue``): 417 for an expectation other than ``100-continue`` (as Go's server), 413 for
    a declared body over the limit, before the client sends it."""
    if request.version < (1, 1):  # HTTP/1.0 has no Expect; ignored, as Go's server and aiohttp do
        return None
    if expect.strip().lower() != "100-continue":
        shown = expect if len(expect) <= 64 else expect[:61] + "..."
        return StatusError(
            status(417, "ExpectationFailed", f'unsupported expectation "{shown}"; only 100-continue')
        )
    length = request.content_length
    if length is not None and length > max_body:
        return too_large(max_body)
    return None


def install_expect_guard(runner: web.AppRunner) -> None:
    """Answer a bad ``Expect`` (see :func:`_expectation_error`) through the front layer (a Status,
    counted and logged) before aiohttp's expect handler would send ``100 Continue`` or a text 417.
    Call between ``runner.setup()`` and starting a site, after :func:`install_dispatcher`."""
    server = runner.server
    if server is None:
        raise RuntimeError("install_expect_guard needs a runner that has been set up")
    inner = server.request_handler
    front = runner.app[FRONT]
    max_body = runner.app[SETTINGS].max_body_bytes

    async def guard(base: web.BaseRequest) -> web.StreamResponse:
        expect = base.headers.get("Expect")
        if expect:
            error = _expectation_error(base, expect, max_body)
            if error is not None:

                async def refuse(_request: web.Request) -> web.StreamResponse:
                    raise error

                response = await front.serve(cast(web.Request, base), refuse, "other")
                response.force_close()  # the body the client may still send is not read
                return response
        return await inner(base)

    server.request_handler = guard
