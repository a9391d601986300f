"""What kube-apiserver sends is read as the standard library reads JSON, quickly or not."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from apiserver.sources.cluster.client import KubeClient

# NaN: read by Python's json module, refused by orjson.
ODD = b'{"kind":"ConfigMap","metadata":{"name":"odd"},"data":{},"big":-9223372036854775808,"x":NaN}'
USUAL = b'{"kind":"ConfigMap","metadata":{"name":"usual"},"data":{"k":"v\\u00e9"},"n":1.5}'


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    async def answer(request: web.Request) -> web.Response:
        if request.query.get("watch") == "true":
            return web.Response(body=USUAL + b"\n" + ODD + b"\n", content_type="application/json")
        body = ODD if request.match_info["name"] == "odd" else USUAL
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/default/configmaps/{name}", answer)
    app.router.add_get("/api/v1/configmaps", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_objects_and_watch_events_read_exactly(upstream: str) -> None:
    client = KubeClient.from_configuration(Configuration(host=upstream))
    try:
        usual = await client.get("/api/v1/namespaces/default/configmaps/usual")
        odd = await client.get("/api/v1/namespaces/default/configmaps/odd")
        events = [e async for e in client.watch("/api/v1/configmaps", {}, idle_timeout=5)]
    finally:
        await client.close()
    assert usual == {"kind": "ConfigMap", "metadata": {"name": "usual"}, "data": {"k": "vé"}, "n": 1.5}
    assert odd["big"] == -(2**63) and math.isnan(odd["x"])
    assert [e["metadata"]["name"] for e in events] == ["usual", "odd"]
    assert events[1]["big"] == odd["big"] and math.isnan(events[1]["x"])
