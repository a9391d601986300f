"""The authorization filter's last step: the request's scope, granted once from what was authorized.

kube-apiserver fixes a request's scope (verb, resource, namespace, name) from its path, authorizes it,
and reads storage only under it. Here the authentication filter (:mod:`apiserver.http.filters.authentication`) authorizes
the path's attributes and then calls :func:`grant_scope`, which leaves on the request the one
:class:`~apiserver.sources.scope.Scope` every handler reads through (:func:`apiserver.http.keys.scope_of`); without
authentication (the folder source on loopback), :class:`OpenScoping` grants the path's scope with every
read allowed. This is the only module that imports :mod:`apiserver.sources.grant` (import-linter).
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler

from apiserver.auth.authorization import Attributes, authorization_path, request_attributes
from apiserver.http.keys import SCOPE
from apiserver.sources.access import ReadAccess
from apiserver.sources.grant import grant


def grant_scope(
    request: web.Request, attributes: Attributes, access: ReadAccess | None, *, all_references: bool = False
) -> None:
    """Leave on ``request`` the scope of ``attributes``, which were just authorized for its caller
    (``access``: their reads beyond it; None, no authentication). Nothing for a non-resource request."""
    if not attributes.resource_request:
        return
    request[SCOPE] = grant(
        verb=attributes.verb,
        group=attributes.group,
        resource=attributes.resource,
        subresource=attributes.subresource,
        namespace=attributes.namespace,
        name=attributes.name,
        access=access,
        all_references=all_references,
    )


_PATH_ATTRIBUTES: dict[tuple[str, str], Attributes] = {}
_PATH_ATTRIBUTES_MAX = 1024  # clients repeat their paths: each parsed once while it is among these
# Without it (no authentication: the folder source's benchmark) a warm GET costs 1.11x the server CPU, PUT
# 1.09x (hack/benchmarks/switches.py, open-scope-memo).


def _open_grant(request: web.Request) -> None:
    path = request.path
    if request.query_string:
        path = authorization_path(request.method, path, request.query)
    key = (request.method, path)
    attributes = _PATH_ATTRIBUTES.get(key)
    if attributes is None:
        if len(_PATH_ATTRIBUTES) >= _PATH_ATTRIBUTES_MAX:
            _PATH_ATTRIBUTES.clear()
        attributes = _PATH_ATTRIBUTES[key] = request_attributes(request.method, path)
    grant_scope(request, attributes, None)


class OpenScoping:
    """The filter where nothing authenticates requests (the folder source on loopback): each request's
    path is its scope, every read allowed. It always admits, synchronously too."""

    __slots__ = ()
    __middleware_version__ = 1  # usable as an aiohttp middleware on its own

    async def __call__(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        _open_grant(request)
        return await handler(request)

    def admit_now(self, request: web.Request) -> bool:
        _open_grant(request)
        return True
