"""Authentication and authorization, the first filter, over ``apiserver.auth.gate.AuthGate``.

The identity headers and the ``Authorization`` header are removed before the handler runs, trusted or
not, so nothing downstream can mistake them for an identity. The caller is left on the request under
``keys.USER`` for the access log.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from multidict import CIMultiDict, CIMultiDictProxy

from apiserver.auth.access import CallerAccess
from apiserver.auth.authorization import authorization_path
from apiserver.auth.gate import AuthGate, RememberedAdmission, RequestInfo
from apiserver.auth.requestheader import RawHeaders
from apiserver.auth.tls import peer_certificate_der
from apiserver.http.errors import StatusError
from apiserver.http.filters.scoping import named_scope, scope_for
from apiserver.http.keys import SCOPE, USER, target_of
from apiserver.http.transport.connections import peer_of, refused_credentials
from apiserver.sources.access import CLOSED
from apiserver.sources.scope import Scope

# Clients repeat the same header sets (the aggregator: the same user and groups): strip each once.
# Without it a GET through authentication costs 1.28x the server CPU, PUT 1.04x (hack/benchmarks/
# switches.py, stripped-headers-memo).
_STRIPPED: dict[tuple[RawHeaders, tuple[str, ...]], tuple[CIMultiDictProxy[str], RawHeaders]] = {}
_STRIPPED_MAX = 256
IN_PLACE = True  # replace the headers on the request itself when aiohttp allows it (tests turn it off)


def _stripped(request: web.Request, strip: tuple[str, ...]) -> tuple[CIMultiDictProxy[str], RawHeaders]:
    """The request's headers without ``strip``, as aiohttp's ``clone(headers=...)`` would make them."""
    key = (request.raw_headers, strip)
    found = _STRIPPED.get(key)
    if found is None:
        headers = CIMultiDict(request.headers)
        for name in strip:
            headers.popall(name, None)
        hidden = {name.lower().encode("utf-8") for name in strip}
        raw = tuple(pair for pair in request.raw_headers if pair[0].lower() not in hidden)
        if len(_STRIPPED) >= _STRIPPED_MAX:
            _STRIPPED.clear()
        found = _STRIPPED[key] = (CIMultiDictProxy(headers), raw)
    return found


def _without(request: web.Request, strip: tuple[str, ...]) -> web.Request:
    """The request as the handler sees it: the same request with the headers replaced in place when
    aiohttp's request keeps them where expected, else a clone. Not for speed (a clone instead measured
    0.99x / 0.94x the server CPU per GET / PUT, hack/benchmarks/switches.py) but because a clone is
    refused once the body was read ("Cannot clone request after reading its content"), and the pipeline
    reads a PUT's body before the filters to answer it from the response cache. The outer middleware reads
    no headers, so it is unaffected either way."""
    headers, raw = _stripped(request, strip)
    inner: Any = request
    message = getattr(inner, "_message", None)
    cache = getattr(inner, "_cache", None)
    if (
        IN_PLACE
        and isinstance(cache, dict)
        and hasattr(message, "_replace")
        and getattr(inner, "_headers", None) is request.headers
    ):
        inner._message = message._replace(headers=headers, raw_headers=raw)  # type: ignore[union-attr]  # noqa: SLF001
        inner._headers = headers  # noqa: SLF001
        cache.pop("headers", None)
        cache.pop("raw_headers", None)
        if request.headers is headers:
            return request
    return request.clone(headers=headers)


class Authentication:
    """The authentication filter: who calls (request-header, client certificate, bearer token), may
    they (SubjectAccessReview), and then their scope (:mod:`.scoping`), over
    :class:`~apiserver.auth.gate.AuthGate`. A caller already admitted with the same request costs two
    dictionary look-ups and a few comparisons (``AuthGate.admitted``); anything else goes through the
    whole decision."""

    __slots__ = ("gate",)
    __middleware_version__ = 1  # usable as an aiohttp middleware on its own

    def __init__(self, gate: AuthGate) -> None:
        self.gate = gate

    async def __call__(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        gate = self.gate
        transport = request.transport
        der = peer_certificate_der(transport.get_extra_info("ssl_object")) if transport is not None else None
        raw = request.raw_headers
        path = target_of(request).path  # the one parse routing read: what is authorized is what is served
        if request.query_string:
            path = authorization_path(request.method, path, request.query)
        admitted = gate.admitted(request.method, path, raw, der)
        if admitted is None:
            info = RequestInfo(
                method=request.method,
                path=path,
                headers=request.headers,
                peer_certificate=der,
                peer=peer_of(transport) if transport is not None else "",
            )
            admitted = await gate.admit(info, raw)
        admission, name = admitted
        verdict = admission.verdict
        if verdict.user is not None:
            request[USER] = verdict.user
        elif verdict.status is None and request.query_string and "verbose" in request.query:
            # An open path (health) asked for details, which only authenticated callers read: who is it?
            info = RequestInfo(
                method=request.method,
                path=target_of(request).path,
                headers=request.headers,
                peer_certificate=der,
                peer=peer_of(transport) if transport is not None else "",
            )
            user = await gate.identify(info)
            if user is not None:
                request[USER] = user
        if verdict.status is not None:
            # Refused for its credentials (not for what it asked, nor for its person's share of
            # reviews): counted against its peer.
            close = verdict.credentials and refused_credentials(request)
            raise StatusError(verdict.status, verdict.headers, close=close)
        _grant(request, gate, admission, name)
        if admission.strip:
            request = _without(request, admission.strip)
        return await handler(request)

    def admit_now(self, request: web.Request) -> bool:
        """True when the gate remembers admitting this very request (``AuthGate.admitted``), having left
        the caller and the same scope as the whole way on it; False when the filter must run (to decide,
        or to refuse). Identity headers stay on the request: what is answered at once is a cached answer
        that reads no header that could carry an identity."""
        gate = self.gate
        transport = request.transport
        der = peer_certificate_der(transport.get_extra_info("ssl_object")) if transport is not None else None
        path = target_of(request).path
        if request.query_string:  # a watch is decided apart, as the whole way decides it
            path = authorization_path(request.method, path, request.query)
        admitted = gate.admitted(request.method, path, request.raw_headers, der)
        if admitted is None or admitted[0].verdict.status is not None:
            return False
        admission, name = admitted
        verdict = admission.verdict
        if verdict.user is not None:
            request[USER] = verdict.user
        _grant(request, gate, admission, name)
        return True


# The scope granted for an admission, kept by the admission's identity: the same caller and attributes
# give the same immutable scope for every request it admits (made per request, it was a few us of each).
# An admission of every name of a namespace is one entry for all the objects asked for there.
_SCOPES: dict[int, tuple[RememberedAdmission, Scope | None]] = {}
_SCOPES_MAX = 1024


def _grant(request: web.Request, gate: AuthGate, admission: RememberedAdmission, name: str) -> None:
    """The request's scope from the attributes its caller was authorized for: their reads beyond it
    decided by their SubjectAccessReviews (see :mod:`apiserver.sources.access`). ``name``: the object
    asked for, when the admission is of every name of its namespace (then the scope is narrowed to it)."""
    known = _SCOPES.get(id(admission))
    if known is not None and known[0] is admission:
        scope = known[1]
    else:
        user, attributes = admission.verdict.user, admission.verdict.attributes
        if attributes is None:
            return
        access = CallerAccess(gate, user) if user is not None else CLOSED
        scope = scope_for(attributes, access, all_references=gate.authorize_references)
        if len(_SCOPES) >= _SCOPES_MAX:
            _SCOPES.clear()
        _SCOPES[id(admission)] = (admission, scope)
    if scope is not None:
        request[SCOPE] = named_scope(scope, name) if name else scope
