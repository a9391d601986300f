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
