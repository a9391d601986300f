"""A request's scope: the one namespace (or every namespace) and name it may read, as authorized.

kube-apiserver cannot read outside a request's scope by mistake: the scope (verb, resource, namespace,
name) is fixed once from the path, authorized once, and storage is read only under that key prefix;
selectors, continue tokens and watch parameters filter inside it. Here the same holds by construction:

* a :class:`Scope` is made only by :func:`apiserver.sources.grant.grant`, which only the authorization
  filter (:mod:`apiserver.http.filters.scoping`) imports, after the request's own SubjectAccessReview allowed
  it (import-linter keeps every other module of the server from importing it, and
  ``tests/sources/test_scope.py`` from calling ``Scope(...)`` anywhere else);
* everything that reads tenant data on a request's behalf takes a Scope and reads nothing it does not
  :meth:`~Scope.covers`: the rendered VMs' store (every read of ``RenderedStore`` takes one), the VM a
  GET expand-spec renders and the VM a rendering may render (:class:`apiserver.sources.reads.Reads`), the objects a rendering reads (the caller's :class:`~apiserver.sources.access.AccessGate`
  reviews any namespaced object outside the scope, whatever its kind);
* the namespace and name a handler uses come from the scope, never again from the path or the query.

A scope names no namespace only for a request authorized at the cluster scope (a list or watch of
every namespace).
"""

from __future__ import annotations

from typing import NamedTuple

from apiserver.sources.access import AccessGate


class Scope(NamedTuple):
    """What one request may read: ``namespace`` (None: every namespace) and ``name`` (None: any), for
    ``verb`` on ``resource``; ``gate``: the caller's tenancy gate for what a rendering reads beyond it
    (None: no authentication, every read allowed). A tuple: immutable, and made per request in a
    fraction of a frozen dataclass's time (0.8 against 2.3 us)."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str | None
    name: str | None
    gate: AccessGate | None

    def covers(self, namespace: str, name: str | None = None) -> bool:
        """Whether an object at ``namespace``/``name`` lies in the scope: the one check every scoped
        read makes (a cluster-scoped object, namespace ``""``, is never a tenant's)."""
        if self.namespace is not None and namespace != self.namespace:
            return False
        return self.name is None or name is None or name == self.name

    def narrowed(self, namespace: str | None) -> str | bool | None:
        """The namespace a read asking for ``namespace`` (None: any) covers inside this scope: the
        scope's when the read names none, the read's when the scope allows it, False when they
        cannot meet (a field selector naming another namespace: an empty answer, as kube-apiserver)."""
        if namespace is None:
            return self.namespace
        if self.namespace is None or namespace == self.namespace:
            return namespace
        return False
