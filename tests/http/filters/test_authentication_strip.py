"""Identity headers and ``Authorization`` never reach a handler, whatever path removes them."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from apiserver.auth.config import TrustOptions, TrustState
from apiserver.auth.gate import AuthGate, RequestInfo, Verdict
from apiserver.auth.identity import UserInfo
from apiserver.http.filters import authentication
from apiserver.http.keys import USER as USER_KEY


class AllowAll(AuthGate):
    """The real gate (identity headers: the default X-Remote-*), deciding that everyone is alice."""

    def __init__(self) -> None:
        super().__init__(TrustState(TrustOptions()), tokens=None, reviewer=None)
        self.seen: list[dict[str, list[str]]] = []

    async def _check(self, info: RequestInfo, basis: object) -> Verdict:
        self.seen.append({k.lower(): info.headers.getall(k, []) for k in info.headers})
        return Verdict(user=UserInfo("alice", "", ("g",), {}, "test"))


async def _echo(request: web.Request) -> web.Response:
    body = await request.read()
    return web.json_response(
        {
            "headers": [[k, v] for k, v in request.headers.items()],
            "raw": [[k.decode(), v.decode()] for k, v in request.raw_headers],
            "body": body.decode(),
            "user": request.get(USER_KEY) is not None,
        }
    )


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "clone"])
async def test_handler_sees_the_request_without_identity_headers(
    in_place: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not in_place:  # as if aiohttp kept its headers elsewhere: the clone path
        monkeypatch.setattr(authentication, "IN_PLACE", False)
    clones: list[int] = []
    clone = web.Request.clone

    def counting_clone(self: web.Request, **kw: Any) -> web.Request:
        clones.append(1)
        return clone(self, **kw)

    monkeypatch.setattr(web.Request, "clone", counting_clone)
    gate: Any = AllowAll()
    app = web.Application(middlewares=[authentication.Authentication(gate)])
    app.router.add_route("*", "/echo", _echo)
    async with TestClient(TestServer(app)) as client:
        for method, data in (("GET", None), ("PUT", b'{"a": 1}'), ("PUT", b'{"a": 1}')):
            headers = [
                ("Authorization", "Bearer sekret"),
                ("X-Remote-User", "mallory"),
                ("X-Remote-Group", "system:masters"),
                ("X-Remote-Group", "other"),
                ("Accept", "application/json"),
            ]
            reply = await client.request(method, "/echo", headers=headers, data=data)
            assert reply.status == 200
            seen: dict[str, Any] = await reply.json()
            names = [k.lower() for k, _ in seen["headers"]]
            raw_names = [k.lower() for k, _ in seen["raw"]]
            for hidden in ("authorization", "x-remote-user", "x-remote-group"):
                assert hidden not in names and hidden not in raw_names
            assert ["Accept", "application/json"] in seen["headers"]
            assert seen["raw"] == seen["headers"]
            assert seen["body"] == (data or b"").decode()
            assert seen["user"] is True
    assert len(clones) == (0 if in_place else 3)
    # The gate itself was shown everything; the repeated PUT was admitted from memory, stripped alike.
    assert len(gate.seen) == 2
    assert all(s["x-remote-group"] == ["system:masters", "other"] for s in gate.seen)
    assert all(s["authorization"] == ["Bearer sekret"] for s in gate.seen)
