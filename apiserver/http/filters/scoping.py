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
from apiserver.http.keys import SCOPE, target_of
from apiserver.sources.access import ReadAccess
from apiserver.sources.grant import grant, narrowed_to
from apiserver.sources.scope import Scope


def grant_scope(
    request: web.Request, attributes: Attributes, access: ReadAccess | None, *, all_references: bool = False
) -> None:
    """Leave on ``request`` the scope of ``attributes``, which were just authorized for its caller
    (``access``: their reads beyond it; None, no authentication). Nothing for a non-resource request."""
    if not attributes.resource_request:
        return
    request[SCOPE] = _scope(attributes, access, all_references=all_references)


def scope_for(
    attributes: Attributes, access: ReadAccess | None, *, all_references: bool = False
) -> Scope | None:
    """:func:`grant_scope`'s scope, for a caller that keeps it for the same caller and attributes
    (None: a non-resource request has none)."""
    if not attributes.resource_request:
        return None
    return _scope(attributes, access, all_references=all_references)


def named_scope(scope: Scope, name: str) -> Scope:
    """The scope of a request for the object ``name`` of a namespace, whose caller was authorized (and
    ``scope`` granted) for every name there: the scope the request's own attributes would be granted."""
    return narrowed_to(scope, name)


def _scope(attributes: Attributes, access: ReadAccess | None, *, all_references: bool = False) -> Scope:
    return grant(
        verb=attributes.verb,
        group=attributes.group,
        resource=attributes.resource,
        subresource=attributes.subresource,
        namespace=attributes.namespace,
        name=attributes.name,
        access=access,
        all_references=all_references,
    )


_PATH_SCOPES: dict[tuple[str, str], Scope | None] = {}
_PATH_SCOPES_MAX = 1024  # clients repeat their paths: each parsed and granted once while among these
# Without the path's attributes remembered (no authentication: the folder source's benchmark) a warm GET
# cost 1.11x the server CPU, PUT 1.09x (hack/benchmarks/switches.py, open-scope-memo); the scope itself
# is remembered too (an immutable tuple granting the same reads for the same path): grant() made per
# request was the "open scope" cost hack/benchmarks/commits.py showed after 58e41c7.


def _open_grant(request: web.Request) -> None:
    path = target_of(request).path
    if request.query_string:
        path = authorization_path(request.method, path, request.query)
    key = (request.method, path)
    try:
        scope = _PATH_SCOPES[key]
    except KeyError:
        attributes = request_attributes(request.method, path)
        scope = _scope(attributes, None) if attributes.resource_request else None
        if len(_PATH_SCOPES) >= _PATH_SCOPES_MAX:
            _PATH_SCOPES.clear()
        _PATH_SCOPES[key] = scope
    if scope is not None:
        request[SCOPE] = scope


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
