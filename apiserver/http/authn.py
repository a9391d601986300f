"""Authentication and authorization as an aiohttp middleware over ``apiserver.auth.middleware.AuthGate``.

The identity headers and the ``Authorization`` header are removed before the handler runs, trusted or
not, so nothing downstream can mistake them for an identity. The caller is left on the request under
``USER_KEY`` for the access log.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from multidict import CIMultiDict

from apiserver.auth.identity import UserInfo
from apiserver.auth.middleware import AuthGate, RequestInfo, Verdict
from apiserver.auth.tls import peer_certificate_der
from apiserver.http.errors import StatusError
from apiserver.http.logging import USER_KEY
from apiserver.render.objects import ObjectRef

GATE_KEY = web.RequestKey("auth_gate", AuthGate)


def _raise_if_refused(verdict: Verdict) -> None:
    if verdict.status is not None:
        raise StatusError(verdict.status, verdict.headers)


def auth_middleware(gate: AuthGate) -> Middleware:
    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        transport = request.transport
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        info = RequestInfo(
            method=request.method,
            path=request.path,
            headers=request.headers,
            peer_certificate=peer_certificate_der(ssl_object),
        )
        verdict = await gate.check(info)
        if verdict.user is not None:
            request[USER_KEY] = verdict.user
        request[GATE_KEY] = gate
        _raise_if_refused(verdict)
        strip = gate.identity_headers(request.headers.keys())
        if "Authorization" in request.headers:
            strip.append("Authorization")
        if strip:
            headers = CIMultiDict(request.headers)
            for name in strip:
                headers.popall(name, None)
            request = request.clone(headers=headers)
        return await handler(request)

    return authenticate


async def check_references(request: web.Request, refs: Iterable[ObjectRef]) -> None:
    """Raise 403 when ``--authorize-references`` is on and the caller may not read what was rendered."""
    gate = request.get(GATE_KEY)
    user = request.get(USER_KEY)
    if gate is None or not isinstance(user, UserInfo):
        return
    _raise_if_refused(await gate.check_references(user, refs))
