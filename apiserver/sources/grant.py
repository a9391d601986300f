"""Granting a request its :class:`~apiserver.sources.scope.Scope`: the one place a Scope is made.

Only the authorization filter (:mod:`apiserver.http.filters.scoping`) may import this module, once the request's
own attributes were authorized (import-linter's contract "Only the authorization filter grants a
scope"); everything else receives the Scope it made.
"""

from __future__ import annotations

from apiserver.sources.access import AccessGate, ReadAccess
from apiserver.sources.scope import Scope


def grant(
    *,
    verb: str,
    group: str,
    resource: str,
    subresource: str = "",
    namespace: str,
    name: str,
    access: ReadAccess | None,
    all_references: bool = False,
) -> Scope:
    """The scope of a request whose attributes (kube-apiserver's, from its path) were just authorized.
    Empty ``namespace`` or ``name``: the request named none (the cluster scope, a collection).
    ``access``: the caller's side of the tenancy gate (None: no authentication, every read allowed);
    ``all_references``: ``--authorize-references``."""
    scoped = namespace or None
    gate = None if access is None else AccessGate(access, all_references, scoped)
    return Scope(verb, group, resource, subresource, scoped, name or None, gate)


def narrowed_to(scope: Scope, name: str) -> Scope:
    """The scope :func:`grant` makes for a request naming ``name`` with the attributes of ``scope``, a
    scope granted for every name of its namespace (the caller was authorized for all of them)."""
    if scope.namespace is None or scope.name is not None:
        raise ValueError("only a scope of every name of one namespace is narrowed to a name")
    return Scope(
        scope.verb, scope.group, scope.resource, scope.subresource, scope.namespace, name, scope.gate
    )
