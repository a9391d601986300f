"""The request pipeline, composed in one place (as k8s.io/apiserver's ``DefaultBuildHandlerChain``).

Every request passes, outermost first:

1. the connection guard (:mod:`apiserver.http.transport.connections`), which the listener puts on every
   connection: connection limits, header and idle timeouts, a Status for what the parser refuses;
2. the target, parsed once (:mod:`apiserver.http.target`): a target that does not parse is a 400, and
   one aiohttp would read otherwise than kube-apiserver (an escape, ``%2F`` above all) is routed as its
   decoded path; every layer inside reads that parse (``keys.target_of``);
3. the expect guard: a bad ``Expect`` is answered (a Status, counted and logged) before aiohttp would
   send ``100 Continue``;
4. dispatch: a route of :mod:`apiserver.http.routing` (the expand endpoints), else aiohttp's router;
5. the front layer (:mod:`apiserver.http.filters.front`): access log and metrics, Statuses, deadline;
6. the filters (:mod:`apiserver.http.filters`), in order: authentication, authorization and the scope;
7. the endpoint.

:class:`Pipeline` composes 5 to 7 once per route (:func:`apiserver.http.filters.compose`) for both kinds
of dispatch, and is the server's request handler for 2 to 4 (installed once, :meth:`Pipeline.install`).
A request of a fast route is answered without running 5 to 7 as coroutines when every filter admits it
synchronously (``admit_now``) and the endpoint has its answer at once (a current cached answer): then the
front layer only counts and logs it. A filter that cannot say synchronously turns that shortcut off, so
no filter can be skipped.

Measured gains (hack/benchmarks/switches.py: the server's CPU time per request with the switch off, against
all on, median of 5 rounds, in one run; warm GET expand-spec / PUT expand-vm-spec): the fast routes 1.26x /
1.36x on the folder source, 1.17x / 1.12x on the cluster source with authentication; the synchronous answer
1.14x / 1.12x on the folder source, 0.97x / 1.11x on the cluster source (its GETs come from the rendered
store, which the shortcut does not spare).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import cast

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from yarl import URL

from apiserver.http.errors import StatusError, too_large
from apiserver.http.filters import Filter, admits_now, compose
from apiserver.http.filters.front import FrontLayer
from apiserver.http.keys import AFTER_SENT, PARAMS, TARGET
from apiserver.http.media import prettify
from apiserver.http.routing import FastRoute, RouteTable
from apiserver.http.target import Target, parse_target
from apiserver.render.kubernetes.errors import status

RequestHandler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]

# Clients repeat their request targets: each parsed once while among these (at most this long each).
_TARGETS_MAX = 4096
_TARGET_MAX = 512


def _template(request: web.Request) -> str:
    """The route template of a request aiohttp routed, or ``other``, so metric labels stay few."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "other"


def expectation_error(request: web.BaseRequest, expect: str, max_body: int) -> StatusError | None:
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


class Pipeline:
    """The front layer and the filters around every endpoint, and the server's request handler."""

    def __init__(
        self, front: FrontLayer, filters: Sequence[Filter], *, max_body: int, fast: Iterable[FastRoute] = ()
    ) -> None:
        self.front = front
        self.filters = tuple(filters)
        self.max_body = max_body
        self._admit_now = admits_now(self.filters)
        fast = tuple(fast)
        self._fast = RouteTable(fast)
        self._fast_chains: dict[str, Handler] = {}
        for route in fast:
            self._fast_chains[route.method + " " + route.template] = compose(
                self.filters, _with_params(route)
            )
        self._routed: dict[Handler, Handler] = {}
        self.dispatched = 0  # requests of fast routes (tests check that the fast path is taken)
        self.answered_at_once = 0  # of which answered without the filters running as coroutines

    def middleware(self) -> Middleware:
        """The application's one middleware: the same layers for the requests aiohttp routes."""
        serve, routed, filters = self.front.serve, self._routed, self.filters

        @web.middleware
        async def pipeline(request: web.Request, handler: Handler) -> web.StreamResponse:
            chain = routed.get(handler)
            if chain is None:  # once per route's handler
                chain = routed[handler] = compose(filters, handler)
            return await serve(request, chain, _template(request))

        return pipeline

    def install(self, runner: web.AppRunner, *, dispatch: bool = True) -> None:
        """Become the server's request handler, around the application's, on connections accepted from
        now on. ``dispatch=False``: every request through aiohttp's router (tests compare the two).
        Call between ``runner.setup()`` and starting a site."""
        server = runner.server
        if server is None:
            raise RuntimeError("Pipeline.install needs a runner that has been set up")
        server.request_handler = self._handler(server.request_handler, dispatch=dispatch)

    def _handler(self, application: RequestHandler, *, dispatch: bool) -> RequestHandler:
        serve, note, admit_now = self.front.serve, self.front.note, self._admit_now
        match, chains, max_body = self._fast.match, self._fast_chains, self.max_body
        clock = time.perf_counter

        async def refuse(error: StatusError, request: web.Request) -> web.StreamResponse:
            async def raise_it(_request: web.Request) -> web.StreamResponse:
                raise error

            response = await serve(request, raise_it, "other")
            response.force_close()  # the body the client may still send is not read
            return response

        targets: dict[str, Target] = {}

        async def handle(base: web.BaseRequest) -> web.StreamResponse:
            request = cast(web.Request, base)  # the application's request factory makes web.Requests
            raw = base.raw_path
            target = targets.get(raw)
            if target is None:
                try:
                    target = parse_target(raw)
                except StatusError as refused:  # before routing, as Go's server refuses it
                    return await refuse(refused, request)
                if len(raw) <= _TARGET_MAX and len(targets) < _TARGETS_MAX:
                    targets[raw] = target
            request[TARGET] = target
            url = None if target.plain else target.rerouted(base.rel_url.path)
            if url is not None:  # routed by aiohttp's router, as its decoded path
                request = _rerouted(request, url)
            expect = request.headers.get("Expect")
            if expect:
                error = expectation_error(request, expect, max_body)
                if error is not None:
                    return await refuse(error, request)
                return await application(request)  # aiohttp's router sends 100 Continue
            found = match(request, target.path) if dispatch and url is None else None
            if found is None:
                return await application(request)
            route, params = found
            self.dispatched += 1
            now, after_body = route.answer_now, route.answer_after_body
            if admit_now is not None and (now is not None or after_body is not None):
                start = clock()
                response = None
                try:
                    if admit_now(request):
                        if now is not None:
                            response = now(request, params)
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
            return await serve(request, chains[route.method + " " + route.template], route.template)

        return handle


def _rerouted(request: web.Request, url: URL) -> web.Request:
    """``request`` as routed by ``url`` (:meth:`Target.rerouted`): a clone. Its state starts as a copy
    of the original's, and the connection's handler reads the after-sent callbacks from the original
    once the answer is written (:func:`apiserver.http.transport.budget.run_after_sent`), so the list they
    are kept in is made here, to be one list for both."""
    if request.get(AFTER_SENT) is None:
        request[AFTER_SENT] = []
    return request.clone(rel_url=url)


def _with_params(route: FastRoute) -> Handler:
    handler = route.handler

    async def endpoint(request: web.Request) -> web.StreamResponse:
        return await handler(request, request[PARAMS])

    return endpoint
