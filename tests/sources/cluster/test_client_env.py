"""The Kubernetes client reads the environment once, not on every request (sources/cluster/client.py):
no ~/.netrc credentials, no worker thread per request, proxies from $HTTPS_PROXY/$NO_PROXY as before."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from apiserver.sources.base import SourceUnavailable
from apiserver.sources.cluster.client import KubeClient, env_proxy

Seen = list[dict[str, str]]


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[str, Seen]]:
    """A plain-HTTP stand-in for kube-apiserver that records the headers of each request."""
    seen: Seen = []

    async def answer(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.json_response({"kind": "Namespace", "metadata": {"name": "default"}})

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


class NoThreads(concurrent.futures.ThreadPoolExecutor):
    """A default executor that fails the request asking for it."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        raise AssertionError(f"a request needed a worker thread: {fn!r}")


async def test_netrc_credentials_are_never_sent_and_no_thread_is_needed(
    upstream: tuple[str, Seen], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    url, seen = upstream
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    asyncio.get_running_loop().set_default_executor(NoThreads())
    client = KubeClient.from_configuration(Configuration(host=url))
    try:
        for _ in range(3):
            assert (await client.get("/api/v1/namespaces/default"))["kind"] == "Namespace"
    finally:
        await client.close()
    assert len(seen) == 3
    assert all("Authorization" not in headers for headers in seen)


async def test_a_token_from_the_configuration_is_still_sent(
    upstream: tuple[str, Seen], clean_env: None
) -> None:
    url, seen = upstream
    config = Configuration(host=url, api_key={"BearerToken": "Bearer t0ken"})
    client = KubeClient.from_configuration(config)
    try:
        await client.get("/api/v1/namespaces/default")
    finally:
        await client.close()
    assert seen[0]["Authorization"] == "Bearer t0ken"


async def proxy_server(lines: list[bytes]) -> asyncio.Server:
    """Records the request head it is sent and refuses to tunnel."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines.extend(head.split(b"\r\n"))
        writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def test_https_proxy_from_the_environment_is_used_with_its_credentials(
    monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    lines: list[bytes] = []
    server = await proxy_server(lines)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:p%40ss@127.0.0.1:{port}")
    client = KubeClient.from_configuration(Configuration(host="https://kube.invalid:6443"), read_timeout=5)
    try:
        with pytest.raises(SourceUnavailable):
            await client.get("/api/v1/namespaces/default")
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
    assert lines[0] == b"CONNECT kube.invalid:6443 HTTP/1.1"
    expected = base64.b64encode(b"user:p@ss").decode()
    assert f"Proxy-Authorization: Basic {expected}".encode().lower() in [x.lower() for x in lines]


async def test_no_proxy_exempts_the_api_server(monkeypatch: pytest.MonkeyPatch, clean_env: None) -> None:
    lines: list[bytes] = []
    server = await proxy_server(lines)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("NO_PROXY", ".invalid,10.0.0.0/8")
    client = KubeClient.from_configuration(Configuration(host="https://kube.invalid:6443"), read_timeout=5)
    try:
        with pytest.raises(SourceUnavailable):  # no such host, and no proxy asked
            await client.get("/api/v1/namespaces/default")
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
    assert lines == []


def test_env_proxy(monkeypatch: pytest.MonkeyPatch, clean_env: None) -> None:
    assert env_proxy("https://10.96.0.1:443") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert env_proxy("https://10.96.0.1:443") == "http://proxy:3128"
    assert env_proxy("http://10.96.0.1:8080") is None  # no HTTP_PROXY
    monkeypatch.setenv("NO_PROXY", "10.96.0.1")
    assert env_proxy("https://10.96.0.1:443") is None
    monkeypatch.delenv("NO_PROXY")
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy:3128")  # aiohttp cannot talk TLS to a proxy
    assert env_proxy("https://10.96.0.1:443") is None
