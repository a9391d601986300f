"""The expand endpoints answered ahead of aiohttp's router and middleware plumbing.

A warm expand request is a dictionary lookup and a copy of cached bytes, while aiohttp's routing (walking
the URL's prefixes through its resource index, awaiting each candidate) and the wrapping of every
middleware per request cost about as much again. So the server's request handler first tries the
expand routes here: one regular expression each, built from the very templates the router registers and
with the router's notion of a variable (``[^{}/]+``), then the same front layer (access log, metrics,
Statuses, deadline) and the same middlewares (authentication) as any other request, composed once.

Everything else reaches the application unchanged: other paths and methods (so 404 and 405 stay
aiohttp's), ``Expect: 100-continue`` (answered by the router's expect handler) and percent-encoded paths
(whose matching the router defines).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import cast

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from apiserver.http.routes import ExpandRoute

# The variables of the route a request matched, for the handler at the end of the middleware chain.
PARAMS: web.RequestKey[dict[str, str]] = web.RequestKey("expand_params", dict)

Front = Callable[[web.Request, Handler, str], Awaitable[web.StreamResponse]]
RequestHandler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]

_VARIABLE = re.compile(r"\{(\w+)\}")


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
        self, routes: Iterable[ExpandRoute], front: Front, middlewares: Iterable[Middleware]
    ) -> None:
        self._front = front
        inner = tuple(middlewares)
        self._routes: dict[str, tuple[_Compiled, ...]] = {}
        for route in routes:
            compiled = _Compiled(template_pattern(route.template), route.template, _chain(route, inner))
            self._routes[route.method] = (*self._routes.get(route.method, ()), compiled)
        self.dispatched = 0  # requests answered here (tests check that the fast path is taken)

    def match(self, request: web.BaseRequest) -> tuple[_Compiled, dict[str, str]] | None:
        routes = self._routes.get(request.method)
        if routes is None or "%" in request.raw_path or request.headers.get("Expect"):
            return None
        path = request.path
        for route in routes:
            found = route.pattern.fullmatch(path)
            if found is not None:
                return route, found.groupdict()
        return None

    def wrap(self, application: RequestHandler) -> RequestHandler:
        """The server's request handler: the expand routes here, the rest to ``application``."""
        front, match = self._front, self.match

        async def handle(request: web.BaseRequest) -> web.StreamResponse:
            found = match(request)
            if found is None:
                return await application(request)
            route, params = found
            self.dispatched += 1
            request[PARAMS] = params
            # The application's request factory makes every request a web.Request.
            return await front(cast(web.Request, request), route.chain, route.template)

        return handle
