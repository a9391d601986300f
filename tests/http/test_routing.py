"""The expand endpoints answered ahead of aiohttp's router give exactly what the router path gives.

Two real servers over the examples folder, one with the dispatcher (the default) and one routing every
request through aiohttp; every request below must get the same status, headers (but ``Date``) and body
from both, and the same access-log line and metrics, whichever way it went.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from apiserver.http.keys import PIPELINE
from apiserver.http.routing import template_pattern
from apiserver.sources.folder import FolderSource
from tests.support.http_helpers import (
    EXAMPLES,
    Reply,
    RunningServer,
    client_ssl,
    put_path,
    running_server,
    vm_path,
)
from tests.support.waiting import eventually

VM = yaml.safe_load((EXAMPLES / "vm-fedora.yaml").read_text())
JSON = {"Accept": "application/json"}

# (method, path, headers, body, answered by the dispatcher?)
CASES: list[tuple[str, str, dict[str, str], bytes | None, bool]] = [
    ("GET", vm_path(), JSON, None, True),
    ("GET", vm_path(version="v1alpha3"), {}, None, True),
    ("GET", vm_path(), {"Accept": "application/yaml"}, None, True),
    ("GET", vm_path(), {"Accept": "text/html"}, None, True),  # 406
    ("GET", vm_path() + "?presets=true&validate=1", JSON, None, True),
    ("GET", vm_path() + "?presets=maybe", JSON, None, True),  # 400
    ("GET", vm_path() + "?presets=true&presets=false", JSON, None, True),  # the first counts (kube-apiserver)
    (
        "GET",
        vm_path() + "?validate=false&note=" + "x" * 600,
        JSON,
        None,
        True,
    ),  # a target too long to remember
    ("GET", vm_path(name="missing"), JSON, None, True),  # 404 Status
    ("GET", vm_path(namespace="other"), JSON, None, True),
    ("GET", vm_path(name="fedora-pinned"), JSON, None, True),
    ("GET", vm_path(group="other.io"), JSON, None, False),  # not served: the router's 404
    ("GET", vm_path(version="v2"), JSON, None, False),
    ("GET", vm_path() + "/", JSON, None, False),
    ("GET", vm_path().replace("/expand-spec", "/expand-specs"), JSON, None, False),
    ("GET", vm_path(name="fed%20ora"), JSON, None, False),  # percent-encoded: the router decides
    ("GET", vm_path(name="fed%2Fora"), JSON, None, False),
    ("GET", vm_path(name="a{b}"), JSON, None, False),
    ("HEAD", vm_path(), JSON, None, False),  # 405
    ("POST", vm_path(), JSON, b"{}", False),  # 405
    ("DELETE", put_path(), JSON, None, False),  # 405
    ("PUT", put_path(), {**JSON, "Content-Type": "application/json"}, orjson.dumps(VM), True),
    ("PUT", put_path(), {"Content-Type": "application/yaml"}, yaml.safe_dump(VM).encode(), True),
    ("PUT", put_path(), {**JSON, "Content-Type": "application/json"}, b"{not json", True),  # 400
    ("PUT", put_path(), {**JSON, "Content-Type": "application/json"}, b"", True),
    ("PUT", put_path(), {**JSON, "Content-Type": "text/plain"}, b"{}", True),  # 415
    ("PUT", put_path(), {**JSON, "Content-Type": "application/json"}, b" " * 5000 + b"{}", True),  # 413
    (
        "PUT",
        put_path(namespace="elsewhere"),
        {**JSON, "Content-Type": "application/json"},
        orjson.dumps(VM),
        True,
    ),
    (
        "PUT",
        put_path(),
        {**JSON, "Content-Type": "application/json", "Expect": "100-continue"},
        orjson.dumps(VM),
        False,
    ),
    ("GET", put_path(), JSON, None, False),  # 405
    ("GET", "/apis/subresources.kubevirt.io/v1", JSON, None, False),
    ("GET", "/readyz", {}, None, False),
]


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[tuple[RunningServer, RunningServer]]:
    async with (
        running_server(FolderSource(EXAMPLES, watch=False), tmp_path / "fast", max_body_bytes=4096) as fast,
        running_server(
            FolderSource(EXAMPLES, watch=False), tmp_path / "routed", dispatch=False, max_body_bytes=4096
        ) as routed,
    ):
        yield fast, routed


def _comparable(reply: Reply) -> tuple[int, dict[str, list[str]], bytes]:
    headers = {k: v for k, v in reply.header_lists.items() if k != "date"}
    return reply.status, headers, reply.body


async def test_every_answer_equals_the_routers(servers: tuple[RunningServer, RunningServer]) -> None:
    fast, routed = servers
    dispatcher = fast.server.app[PIPELINE]
    for repeat in (False, True):  # the second time, cached answers are given at once
        at_once = dispatcher.answered_at_once
        for method, path, headers, body, dispatched in CASES:
            before = dispatcher.dispatched
            got = await fast.request(method, path, headers=headers, data=body)
            want = await routed.request(method, path, headers=headers, data=body)
            assert _comparable(got) == _comparable(want), (method, path, headers)
            assert dispatcher.dispatched - before == int(dispatched), (method, path, headers)
        # At once: what was 200 before - GET JSON, v1alpha3, YAML, with flags (twice: repeated presets
        # read as the first), the pinned VM, PUT JSON and YAML - and the long target, whose unknown
        # query parameter leaves the JSON GET's answer.
        assert dispatcher.answered_at_once - at_once == (9 if repeat else 1)
    assert routed.server.app[PIPELINE].dispatched == 0


async def test_etag_revalidation_is_a_304_both_ways(servers: tuple[RunningServer, RunningServer]) -> None:
    for server in servers:
        first = await server.get(vm_path(), headers=JSON)
        again = await server.get(vm_path(), headers={**JSON, "If-None-Match": first.headers["etag"]})
        assert (first.status, again.status, again.body) == (200, 304, b"")
        assert again.headers["etag"] == first.headers["etag"]


def _request_series(text: str) -> list[str]:
    return sorted(
        line for line in text.splitlines() if line.startswith("kubevirt_expand_http_requests_total")
    )


async def test_metrics_and_access_log_match(
    servers: tuple[RunningServer, RunningServer], caplog: pytest.LogCaptureFixture
) -> None:
    fast, routed = servers
    lines: dict[str, list[str]] = {}
    for name, server in (("fast", fast), ("routed", routed)):
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="apiserver.access"):  # routine answers are debug
            for method, path, headers, body, _ in CASES:
                await server.request(method, path, headers=headers, data=body)
        # The latency differs; method, path, code and user do not.
        lines[name] = [re.sub(r" [0-9.]+ms", " _ms", r.getMessage()) for r in caplog.records]
    assert lines["fast"] == lines["routed"]
    assert len(lines["fast"]) == len(CASES)
    fast_metrics = await fast.get("/metrics")
    routed_metrics = await routed.get("/metrics")
    series = _request_series(fast_metrics.body.decode())
    assert series == _request_series(routed_metrics.body.decode())
    template = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}/expand-spec"
    assert any(f'endpoint="{template}"' in line and 'code="200"' in line for line in series)


@pytest.mark.parametrize(
    ("template", "path", "expected"),
    [
        ("/a/{x}/b", "/a/one/b", {"x": "one"}),
        ("/a/{x}/b", "/a//b", None),
        ("/a/{x}/b", "/a/o/n/b", None),
        ("/a/{x}/b", "/a/{o}/b", None),
        ("/a.b/{x}", "/aXb/one", None),  # literal parts are literal
        ("/a/{x}/{y}", "/a/1/2", {"x": "1", "y": "2"}),
    ],
)
def test_template_pattern_matches_like_the_router(template: str, path: str, expected: Any) -> None:
    found = template_pattern(template).fullmatch(path)
    assert (found.groupdict() if found else None) == expected


async def test_a_body_still_arriving_is_read_under_the_deadline(
    servers: tuple[RunningServer, RunningServer],
) -> None:
    """A cached PUT whose body comes late is answered the whole way (where the deadline holds)."""
    fast, _ = servers
    body = orjson.dumps(VM)
    headers = {**JSON, "Content-Type": "application/json"}
    assert (await fast.put(put_path(), headers=headers, data=body)).status == 200  # now cached
    dispatcher = fast.server.app[PIPELINE]
    at_once, dispatched = dispatcher.answered_at_once, dispatcher.dispatched

    port = int(fast.url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ssl(fast.ca_file))
    head = (
        f"PUT {put_path()} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode())
    await writer.drain()
    # The headers are in (the request is handled); the body is not.
    await eventually(lambda: dispatcher.dispatched != dispatched, 10, "the server reading the headers")
    writer.write(body)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b'"name":"fedora"' in answer
    assert dispatcher.answered_at_once == at_once
    assert (await fast.put(put_path(), headers=headers, data=body)).status == 200
    assert dispatcher.answered_at_once == at_once + 1
