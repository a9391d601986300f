"""Every key the server keeps on its application and on a request, in one place (aiohttp's typed keys).

App keys hold what the whole application shares; request keys what one request carries from a layer
of the pipeline (:mod:`apiserver.http.pipeline`) to the layers inside it. Each says who sets it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from aiohttp import web

from apiserver.http.errors import internal_error
from apiserver.http.metrics import Metrics
from apiserver.http.settings import Settings
from apiserver.http.state import ChecksFn, ServerState
from apiserver.http.target import Target, parse_target
from apiserver.sources.base import Source
from apiserver.sources.scope import Scope


class Installs(Protocol):
    """The request pipeline (apiserver.http.pipeline.Pipeline), as the server installs it on its runner,
    with its counts of requests of fast routes and of those answered at once."""

    dispatched: int
    answered_at_once: int

    def install(self, runner: web.AppRunner, *, dispatch: bool = True) -> None: ...


class Deadline(Protocol):
    """A request's deadline (apiserver.http.transport.deadlines): ``finish`` ends it, True when it had
    not passed."""

    def finish(self) -> bool: ...


# -- the application's (set by apiserver.http.app.build_app) ------------------------------------------
SETTINGS = web.AppKey("settings", Settings)
SOURCE = web.AppKey("source", Source)
METRICS = web.AppKey("metrics", Metrics)
STATE = web.AppKey("state", ServerState)
# What /readyz checks beyond the server's own state (the source's checks and the caller's).
READINESS: web.AppKey[ChecksFn] = web.AppKey("readiness")
PIPELINE: web.AppKey[Installs] = web.AppKey("pipeline")

# -- a request's ----------------------------------------------------------------------------------------
# The request's target parsed once (apiserver.http.target), left by the pipeline before routing: what
# routing, authorization, the scope and the access log read. Read with target_of.
TARGET: web.RequestKey[Target] = web.RequestKey("target", Target)
# The caller, left by the authentication filter: a user name, or an object with a ``name`` or
# ``username`` attribute (apiserver.auth.identity.UserInfo). Read by the access log and the shares.
USER = web.RequestKey("user", object)
# The scope the authorization filter granted (apiserver.http.filters.scoping); read with scope_of.
SCOPE: web.RequestKey[Scope] = web.RequestKey("scope", Scope)
# The request's deadline, left by the front layer (a watch ends it: it is long-running).
DEADLINE: web.RequestKey[Deadline] = web.RequestKey("deadline")
# The variables of the route a request matched ahead of aiohttp's router (apiserver.http.dispatch).
PARAMS: web.RequestKey[Mapping[str, str]] = web.RequestKey("route_params")
# Callbacks to run once the request's answer has been written out (apiserver.http.transport.budget).
AFTER_SENT: web.RequestKey[list[Callable[[], None]]] = web.RequestKey("after_sent")


def scope_of(request: web.Request) -> Scope:
    """The scope granted to ``request``; a request that reached a handler without one (a route outside
    the authorization filter: a bug) reads nothing."""
    scope: Scope | None = request.get(SCOPE)
    if scope is None:
        raise internal_error("the request was not authorized for any scope")
    return scope


def target_of(request: web.BaseRequest) -> Target:
    """The target the pipeline parsed for ``request`` (parsed now, and kept, for a request that did not
    come through it: an application served without :meth:`Installs.install`, the probes' listener).
    Raises the 400 :class:`~apiserver.http.errors.StatusError` of a target that does not parse."""
    target: Target | None = request.get(TARGET)
    if target is None:
        target = request[TARGET] = parse_target(request.raw_path)
    return target
