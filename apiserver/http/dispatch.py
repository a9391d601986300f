"""The expand endpoints answered ahead of aiohttp's router and middleware plumbing.

A warm expand request is a dictionary lookup and a copy of cached bytes, while aiohttp's routing (walking
the URL's prefixes through its resource index, awaiting each candidate) and the wrapping of every
middleware per request cost about as much again. So the server's request handler first tries the
expand routes here: one regular expression each, built from the very templates the router registers and
with the router's notion of a variable (``[^{}/]+``), then the same front layer (access log, metrics,
Statuses, deadline) and the same middlewares (authentication) as any other request, composed once.

An answer already in the response cache is given without even that: the route's synchronous
``cached`` handler returns it (or None), after the middlewares' synchronous ``admission`` shortcut has
confirmed that they would let the request through (the authentication gate remembers whom it admitted);
nothing is awaited (a PUT's ``cached_after_body`` awaits its body, nothing else), so there are no
coroutines to chain and no deadline to keep, and the front layer only counts and logs it. Anything the
shortcut or the handler cannot settle at once runs the whole way.

Everything else reaches the application unchanged: other paths and methods (so 404 and 405 stay
aiohttp's), ``Expect: 100-continue`` (answered by the router's expect handler) and percent-encoded paths
(whose matching the router defines).
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple, cast

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from apiserver.http.endpoints.expand import BodyCachedHandler, CachedHandler, ExpandRoute
from apiserver.http.media import prettify

# The variables of the route a request matched, for the handler at the end of the middleware chain.
PARAMS: web.RequestKey[dict[str, str]] = web.RequestKey("expand_params", dict)

RequestHandler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
# True when the middlewares would pass the request on to the handler as it is now, having left on it
# the caller (``USER_KEY``), and would have nothing more to check after it; False when they must run
# (to decide, to refuse, or to review what the rendering read: ``--authorize-references``).
Admission = Callable[[web.Request], bool]


class FrontLayer(NamedTuple):
    """The front layer (access log, metrics, Statuses, deadline) of :mod:`apiserver.http.app`."""

    serve: Callable[[web.Request, Handler, str], Awaitable[web.StreamResponse]]
    # Count and log an answer given without ``serve``: request, code, route template, seconds.
    note: Callable[[web.Request, int, str, float], None]


_VARIABLE = re.compile(r"\{(\w+)\}")
_MATCHED_MAX = 4096
_MATCHED_TARGET_MAX = 512


def template_pattern(template: str) -> re.Pattern[str]:
    """The full-match pattern of a route template, variables as aiohttp's router matches them."""
    pattern, last = "", 0
    for var in _VARIABLE.finditer(template):
        pattern += re.escape(template[last : var.start()]) + f"(?P<{var.group(1)}>[^{{}}/]+)"
        last = var.end()
    return re.compile(pattern + re.escape(template[last:]))


@dataclass(frozen=True, slots=True)
class _Compiled:
    pattern: re.Pattern[str]
    template: str
    chain: Handler  # the middlewares around the route's handler
    cached: CachedHandler | None  # None: no answer without the whole way
    cached_after_body: BodyCachedHandler | None


def _chain(route: ExpandRoute, middlewares: Iterable[Middleware]) -> Handler:
    handler = route.handler

    async def endpoint(request: web.Request) -> web.StreamResponse:
        params: dict[str, str] = request[PARAMS]
        return await handler(request, params)

    chain: Handler = endpoint
    for middleware in reversed(list(middlewares)):
        chain = partial(middleware, handler=chain)
    return chain


class Dispatcher:
    """Wraps the application's request handler with the expand routes."""

    def __init__(
        self,
        routes: Iterable[ExpandRoute],
        front: FrontLayer,
        middlewares: Iterable[Middleware],
        *,
        admission: Admission | None = None,
    ) -> None:
        """``admission``: the middlewares' synchronous shortcut; with middlewares and without it, no
        answer skips them."""
        self._front = front
        inner = tuple(middlewares)
        self._admission = admission
        shortcut = admission is not None or not inner
        self._routes: dict[str, tuple[_Compiled, ...]] = {}
        for route in routes:
            compiled = _Compiled(
                template_pattern(route.template),
                route.template,
                _chain(route, inner),
                route.cached if shortcut else None,
                route.cached_after_body if shortcut else None,
            )
            self._routes[route.method] = (*self._routes.get(route.method, ()), compiled)
        # Clients repeat their request targets: (method, raw target) -> what matched, or None.
        self._matched: dict[tuple[str, str], tuple[_Compiled, dict[str, str]] | None] = {}
        self.dispatched = 0  # requests answered here (tests check that the fast path is taken)
        self.answered_at_once = 0  # of which by a route's synchronous handler

    def match(self, request: web.BaseRequest) -> tuple[_Compiled, dict[str, str]] | None:
        """The route and its variables (shared by requests for the same target: read them only)."""
        if request.headers.get("Expect"):
            return None
        key = (request.method, request.raw_path)
        try:
            return self._matched[key]
        except KeyError:  # a target not seen lately
            pass
        found = self._match(request)
        if len(key[1]) <= _MATCHED_TARGET_MAX:  # bounded memory: at most this much per entry
            if len(self._matched) >= _MATCHED_MAX:
                self._matched.clear()
            self._matched[key] = found
        return found

    def _match(self, request: web.BaseRequest) -> tuple[_Compiled, dict[str, str]] | None:
        routes = self._routes.get(request.method)
        if routes is None or "%" in request.raw_path:
            return None
        path = request.path
        for route in routes:
            found = route.pattern.fullmatch(path)
            if found is not None:
                return route, found.groupdict()
        return None

    def wrap(self, application: RequestHandler) -> RequestHandler:
        """The server's request handler: the expand routes here, the rest to ``application``."""
        serve, note, match, admission = self._front.serve, self._front.note, self.match, self._admission
        clock = time.perf_counter

        async def handle(base: web.BaseRequest) -> web.StreamResponse:
            found = match(base)
            if found is None:
                return await application(base)
            route, params = found
            self.dispatched += 1
            request = cast(web.Request, base)  # the application's request factory makes web.Requests
            cached, after_body = route.cached, route.cached_after_body
            if cached is not None or after_body is not None:
                start = clock()
                response = None
                try:
                    if admission is None or admission(request):
                        if cached is not None:
                            response = cached(request, params)
                        elif after_body is not None:
                            response = await after_body(request, params)
                except Exception:  # whatever it was, the whole way turns it into a Status
                    response = None
                if response is not None:
                    prettify(request, response)
                    self.answered_at_once += 1
                    note(request, response.status, route.template, clock() - start)
                    return response
            request[PARAMS] = params
            return await serve(request, route.chain, route.template)

        return handle
