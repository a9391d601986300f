"""The aiohttp application: its routes, shared state, the source's lifecycle, and its request pipeline
(:mod:`apiserver.http.pipeline`: the front layer and the filters around every endpoint, composed there)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterable

from aiohttp import web
from aiohttp.typedefs import Handler

from apiserver.http.endpoints import (
    catalogchange,
    discovery,
    expand,
    expandedvms,
    health,
    launcher,
    openapi,
    preview,
    version,
)
from apiserver.http.filters import Filter
from apiserver.http.filters.front import front_layer
from apiserver.http.filters.scoping import OpenScoping
from apiserver.http.keys import METRICS, PIPELINE, READINESS, SETTINGS, SOURCE, STATE, USER
from apiserver.http.logging import log_request
from apiserver.http.metrics import CONTENT_TYPE, Metrics
from apiserver.http.pipeline import Pipeline
from apiserver.http.settings import Settings
from apiserver.http.state import ChecksFn, ServerState
from apiserver.http.transport.deadlines import Deadlines
from apiserver.http.transport.seats import Seats, export_seats
from apiserver.http.transport.shares import Shares, export_shares
from apiserver.sources.base import Check, HoldsFleet, Source

_log = logging.getLogger(__name__)


def build_app(
    settings: Settings,
    source: Source,
    *,
    filters: Iterable[Filter] = (),
    metrics: Metrics | None = None,
    state: ServerState | None = None,
    checks: Iterable[ChecksFn] = (),
) -> web.Application:
    """The whole HTTP API over ``source``; the app starts and closes the source with itself, and its
    request pipeline (``app[PIPELINE]``, :mod:`apiserver.http.pipeline`) is the server's to install.

    ``filters`` run inside the front layer (so their failures become Statuses), in order, before every
    endpoint: authentication, authorization and the scope (:mod:`apiserver.http.filters`). Without any,
    nothing authenticates requests and each gets its path's scope (:class:`OpenScoping`).
    """
    metrics = metrics or Metrics()
    state = state or ServerState()
    metrics.watch_source(source)
    deadlines = Deadlines(settings.request_timeout)
    chosen = tuple(filters)
    authenticated = bool(chosen)
    # Filled below with the endpoints that are not the expand API (see the comment there).
    routine: set[str] = set()
    front = front_layer(settings, metrics, deadlines, identified=authenticated, routine=routine)
    app = web.Application(client_max_size=settings.max_body_bytes)
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

    seats = Seats(settings.cpu_seats, settings.cpu_queue_per_user)
    export_seats(metrics, seats)
    fast = expand.add_routes(app, settings, source, metrics, seats)
    store = getattr(source, "rendered", None)
    watches = Shares(
        "watches",
        settings.watch_places,
        settings.max_watches_per_user,
        flags=("--max-watches", "--max-watches-per-user"),
    )
    export_shares(metrics, "watches", watches)
    expandedvms.add_routes(app, expandedvms.ExpandedVMHandlers(store, metrics, watches, seats))
    preview.add_routes(app, settings, source, seats)
    # The catalog change preview reads the whole fleet: served where the source holds it (the cluster
    # source with its VM cache, as the collection).
    fleet = isinstance(source, HoldsFleet) and source.holds_fleet()
    if fleet:
        catalogchange.add_routes(app, settings, source)  # its work runs off the loop (offload)
    launcher.add_routes(app, settings, source, seats)
    expand_api = {resource.canonical for resource in app.router.resources()}
    discovery.add_routes(app, settings, collection=store is not None, catalog=fleet)
    openapi.add_routes(app, settings, collection=store is not None, catalog=fleet)
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
    pipeline = Pipeline(front, chosen or (OpenScoping(),), max_body=settings.max_body_bytes, fast=fast)
    app.middlewares.append(pipeline.middleware())
    app[PIPELINE] = pipeline
    return app


def _authenticated(request: web.Request) -> bool:
    return request.get(USER) is not None


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
