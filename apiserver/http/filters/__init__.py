"""Request filters: one per module, run between the front layer and the endpoint in the order
:mod:`apiserver.http.pipeline` composes them, as k8s.io/apiserver's ``DefaultBuildHandlerChain`` composes
its own (authentication and authorization, then the scope, in :mod:`.authentication` and :mod:`.scoping`).

A filter is an aiohttp middleware: ``await filter(request, handler)``. One that can also decide
synchronously that it would pass a request on as it is says so with ``admit_now``, having done to the
request what it does (the caller and the scope left on it); the pipeline answers a request without
awaiting anything only when every filter has ``admit_now`` and each returns True. A filter without it
(an audit filter, say) therefore turns the shortcut off: no filter can be skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Protocol, runtime_checkable

from aiohttp import web
from aiohttp.typedefs import Handler


class Filter(Protocol):
    """One step of the request path (an aiohttp middleware)."""

    async def __call__(self, request: web.Request, handler: Handler) -> web.StreamResponse: ...


@runtime_checkable
class AdmitsNow(Protocol):
    """A filter that can tell without awaiting that it passes ``request`` on: True, having done to it
    what it does; False when it must run (to decide, to refuse)."""

    def admit_now(self, request: web.Request) -> bool: ...


def compose(filters: Iterable[Filter], endpoint: Handler) -> Handler:
    """``endpoint`` inside ``filters``, the first outermost."""
    chain: Handler = endpoint
    for step in reversed(list(filters)):
        chain = partial(step, handler=chain)
    return chain


def admits_now(filters: Sequence[Filter]) -> Callable[[web.Request], bool] | None:
    """Whether every filter passes a request on, asked synchronously of each in order; None when a
    filter cannot say (then nothing is answered without running the filters)."""
    checks = []
    for step in filters:
        if not isinstance(step, AdmitsNow):
            return None
        checks.append(step.admit_now)
    if len(checks) == 1:
        return checks[0]

    def every(request: web.Request) -> bool:
        return all(check(request) for check in checks)

    return every
