"""One path, one meaning (issue 37, finding 2): a request's target is parsed once, as kube-apiserver (Go's
net/http) parses it, and routing, authorization, the scope and the access log read that parse.

Before, aiohttp's router matched ``virtualmachines/fedora%2Fexpand-spec/launch-spec`` as the launch-spec
of a VM named ``fedora/expand-spec`` while authorization read the decoded path (expand-spec of
``fedora``); now every encoded variant of a path gets what its decoded path gets, as through
kube-apiserver's aggregator (which forwards the decoded path).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
import yaml
from yarl import URL

from apiserver.http.errors import StatusError
from apiserver.http.logging import ACCESS_LOGGER
from apiserver.http.target import Target, parse_target
from apiserver.sources.folder import FolderSource
from tests.support.http_helpers import EXAMPLES, RunningServer, put_path, running_server, vm_path

VM = yaml.safe_load((EXAMPLES / "vm-fedora.yaml").read_text())
BASE = "/apis/subresources.kubevirt.io/v1/namespaces"


@pytest.mark.parametrize(
    ("target", "parsed"),
    [
        ("/a/b", Target("/a/b", "/a/b", plain=True)),
        ("/a/b?x=1%2F", Target("/a/b", "/a/b", "x=1%2F", plain=True)),
        ("/a/vm%2Fexpand-spec/launch", Target("/a/vm%2Fexpand-spec/launch", "/a/vm/expand-spec/launch")),
        ("/a/vm%2fx", Target("/a/vm%2fx", "/a/vm/x")),
        ("/a/b%252F", Target("/a/b%252F", "/a/b%2F")),  # decoded once, not twice
        ("/a/vm#/launch?q", Target("/a/vm#/launch", "/a/vm#/launch", "q")),  # Go keeps "#" in the path
        ("https://h:1/a%2Fb?q", Target("/a%2Fb", "/a/b", "q")),  # absolute-form
        ("/a/%FF", Target("/a/%FF", "/a/\ufffd")),
    ],
)
def test_a_target_is_parsed_as_go_parses_it(target: str, parsed: Target) -> None:
    assert parse_target(target) == parsed


@pytest.mark.parametrize(("target", "escape"), [("/a/de%zzf", "%zz"), ("/a/b%", "%"), ("/a/b%2", "%2")])
def test_an_invalid_escape_is_a_400(target: str, escape: str) -> None:
    with pytest.raises(StatusError) as caught:
        parse_target(target)
    assert caught.value.status["code"] == 400
    assert caught.value.status["message"] == f'invalid URL escape "{escape}"'


def test_a_target_aiohttp_reads_otherwise_is_rerouted_as_its_decoded_path() -> None:
    assert parse_target("/a/b").rerouted("/a/b") is None
    url = parse_target("/a/vm%2Fx/launch?q=1").rerouted("/a/vm/x/launch")
    assert url is not None and url.path_safe == "/a/vm/x/launch" and url.raw_query_string == "q=1"
    hashed = parse_target("/a/vm#/launch").rerouted("/a/vm")  # yarl took "#/launch" for a fragment
    assert hashed is not None and hashed.path_safe == "/a/vm#/launch"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(FolderSource(EXAMPLES, watch=False), tmp_path) as running:
        yield running


async def _send(
    server: RunningServer, method: str, target: str, body: bytes | None = None
) -> tuple[int, bytes]:
    """``target`` sent as written (the client re-encodes nothing)."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    async with server.session.request(
        method, URL(server.url + target, encoded=True), data=body, headers=headers
    ) as resp:
        return resp.status, await resp.read()


@pytest.mark.parametrize(
    ("method", "variant"),
    [
        # The review's: a launch-spec behind a name carrying "/expand-spec" (was the launch-spec of fedora).
        ("GET", f"{BASE}/default/virtualmachines/fedora%2Fexpand-spec/launch-spec"),
        ("GET", f"{BASE}/default/virtualmachines/fedora%2Fexpand-spec"),
        ("GET", f"{BASE}/default/virtualmachines/fedora%2fexpand-spec"),
        ("GET", f"{BASE}/default%2Fvirtualmachines%2Ffedora%2Fexpand-spec"),
        ("GET", f"{BASE}/default/virtualmachines/fedora/expand%2Dspec"),
        ("GET", f"{BASE}/default/virtual%6Dachines/fedora/expand-spec"),
        ("GET", f"{BASE}/default/virtualmachines/fedora%252Fexpand-spec/launch-spec"),
        ("GET", f"{BASE}/default/virtualmachines/fedora%23/launch-spec"),
        ("PUT", f"{BASE}/default%2Flaunch-vm-spec/expand-vm-spec"),
        ("PUT", f"{BASE}/def%61ult/expand-vm-spec"),
        ("PUT", f"{BASE}/default%2Fexpand-vm-spec"),
    ],
)
async def test_every_encoded_variant_gets_what_its_decoded_path_gets(
    server: RunningServer, method: str, variant: str
) -> None:
    body = orjson.dumps(VM) if method == "PUT" else None
    decoded = parse_target(variant).path
    want = await _send(server, method, decoded.replace("%", "%25").replace("#", "%23"), body)
    got = await _send(server, method, variant, body)
    assert got == want, (variant, decoded)


async def test_the_reviews_variant_is_not_the_launch_spec(server: RunningServer) -> None:
    code, body = await _send(
        server, "GET", f"{BASE}/default/virtualmachines/fedora%2Fexpand-spec/launch-spec"
    )
    assert code == 404 and b"VirtualMachineLaunch" not in body
    code, body = await _send(server, "GET", f"{BASE}/default/virtualmachines/fedora%2Fexpand-spec")
    assert code == 200 and orjson.loads(body)["kind"] == "VirtualMachine"  # as GET .../fedora/expand-spec


async def test_an_invalid_escape_is_a_400_status_before_routing(server: RunningServer) -> None:
    code, body = await _send(server, "GET", f"{BASE}/de%zzfault/virtualmachines/fedora/expand-spec")
    assert code == 400
    doc = orjson.loads(body)
    assert (doc["kind"], doc["reason"], doc["message"]) == (
        "Status",
        "BadRequest",
        'invalid URL escape "%zz"',
    )


async def test_a_rerouted_put_gives_its_body_bytes_back(server: RunningServer) -> None:
    for _ in range(3):
        code, _body = await _send(
            server, "PUT", put_path().replace("/default/", "/def%61ult/"), orjson.dumps(VM)
        )
        assert code == 200
    assert await server.metric("kubevirt_expand_body_bytes_held") == 0


async def test_the_access_log_writes_the_target_as_received(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    variant = vm_path().replace("fedora/expand-spec", "fedora%2Fexpand-spec") + "?pretty=1"
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        code, _ = await _send(server, "GET", variant)
        assert code == 200
        for handler in logging.getLogger().handlers:
            handler.flush()
    lines = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER]
    assert any(f"GET {variant} 200" in line for line in lines), lines
