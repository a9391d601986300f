"""Names in the request path are checked as Kubernetes checks names before anything is read under them:
a VM called ``.`` or a namespace called ``..`` is a 422 naming the field, never a list or another
resource. Sent as raw HTTP, since a client library would resolve the dot segments itself."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from tests.support.http_helpers import GROUP, RunningServer, client_ssl, examples_server

BASE = f"/apis/{GROUP}/v1/namespaces"


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with examples_server(tmp_path) as running:
        yield running


async def raw(
    srv: RunningServer, method: str, target: str, body: bytes = b""
) -> tuple[int, dict[str, object]]:
    """One request with ``target`` sent exactly as given; (status, JSON body)."""
    context: ssl.SSLContext = client_ssl(srv.ca_file)
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.server.port, ssl=context)
    head = f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(body)}\r\n"
    if body:
        head += "Content-Type: application/json\r\n"
    writer.write(head.encode() + b"\r\n" + body)
    data = await reader.read()
    writer.close()
    header, _, payload = data.partition(b"\r\n\r\n")
    return int(header.split()[1]), orjson.loads(payload)


@pytest.mark.parametrize(
    ("target", "field", "value"),
    [
        (f"{BASE}/default/virtualmachines/./expand-spec", "metadata.name", "."),
        (f"{BASE}/default/virtualmachines/../expand-spec", "metadata.name", ".."),
        (f"{BASE}/default/virtualmachines/%2E%2E/expand-spec", "metadata.name", ".."),
        (f"{BASE}/default/virtualmachines/Fedora/expand-spec", "metadata.name", "Fedora"),
        (f"{BASE}/../virtualmachines/fedora/expand-spec", "metadata.namespace", ".."),
        (f"{BASE}/a.b/virtualmachines/fedora/expand-spec", "metadata.namespace", "a.b"),
    ],
)
async def test_get_with_a_name_no_object_can_have(
    srv: RunningServer, target: str, field: str, value: str
) -> None:
    code, body = await raw(srv, "GET", target)
    assert code == 422, body
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"] == [  # type: ignore[index]
        {
            "reason": "FieldValueInvalid",
            "message": body["details"]["causes"][0]["message"],  # type: ignore[index]
            "field": field,
        }
    ]
    assert str(body["message"]).startswith(f'{field}: Invalid value: "{value}": a lowercase RFC 1123 ')


async def test_put_into_a_namespace_no_object_can_have(srv: RunningServer) -> None:
    vm = b'{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"x"},"spec":{}}'
    code, body = await raw(srv, "PUT", f"{BASE}/%2E/expand-vm-spec", vm)
    assert code == 422, body
    assert body["details"]["causes"][0]["field"] == "metadata.namespace"  # type: ignore[index]
