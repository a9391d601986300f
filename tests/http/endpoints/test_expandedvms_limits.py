"""The collection's watches under the connection limits (issue 15): a watch is long-lived and mostly idle,
and an idle watch is not a slow reader. It outlasts the body, header and idle timeouts, and a full
connection pool never lets it go for another peer; a watch whose client stops taking its events is cut
after --body-timeout, as a slow reader of any answer is.

Over the fake API server, the server with timeouts of a fraction of a second and three connection places.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from apiserver.sources.cluster import ClusterSource
from tests.http.endpoints.test_expandedvms import BASE, vm
from tests.support.fakekube import FakeKube
from tests.support.fakekube.testing import eventually, instancetype, kubeconfig, preference, synced
from tests.support.http_helpers import RunningServer, client_ssl, running_server
from tests.support.patience import patience

FAST = {"backoff": (0.02, 0.2), "read_timeout": 2.0}
TIMEOUT = 0.3  # --body-timeout, --read-header-timeout and --idle-timeout alike
WATCH = f"{BASE}/expandedvirtualmachines?watch=true"


@pytest.fixture
async def fake() -> AsyncIterator[FakeKube]:
    async with FakeKube(bookmark_interval=0.1) as f:
        f.create(instancetype("small", cpus=2))
        f.create(preference("cores"))
        yield f


@asynccontextmanager
async def serve(
    fake: FakeKube, tmp_path: Path, vms: int, annotation: int = 0
) -> AsyncIterator[RunningServer]:
    for i in range(vms):
        made = vm(f"vm-{i}")
        if annotation:
            made["metadata"]["annotations"] = {"note": "x" * annotation}
        fake.create(made)
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), vm_cache=True, **FAST)  # type: ignore[arg-type]
    async with running_server(
        source,
        tmp_path,
        body_timeout=TIMEOUT,
        min_body_rate=1024,
        header_timeout=TIMEOUT,
        idle_timeout=TIMEOUT,
        max_connections=3,
        handshake_timeout=patience(60),  # the silent connections below stay for the whole test
    ) as srv:
        await synced(source, fake)
        assert source.rendered is not None
        await asyncio.wait_for(source.rendered.ready.wait(), patience(5))
        yield srv


def tls_from(srv: RunningServer, address: str, receive_buffer: int = 0) -> ssl.SSLSocket:
    raw = socket.socket()
    if receive_buffer:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    raw.settimeout(patience(10))
    raw.bind((address, 0))
    raw.connect(("127.0.0.1", srv.server.port))
    return client_ssl(srv.ca_file).wrap_socket(raw, server_hostname="127.0.0.1")


def livez(srv: RunningServer) -> int:
    """A new connection from 127.0.0.1 asking /livez: its status, 0 when the connection was refused."""
    try:
        with tls_from(srv, "127.0.0.1") as tls:
            tls.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
    except (ConnectionError, ssl.SSLError):
        return 0
    return int(data.split()[1]) if data else 0


async def test_an_idle_watch_outlasts_every_timeout_and_is_never_let_go_for_another_peer(
    fake: FakeKube, tmp_path: Path
) -> None:
    """127.0.0.2 holds all three places: a watch and two connections that never start TLS. Each new
    connection of 127.0.0.1 takes the place of one of the silent ones (127.0.0.2 opening another after
    it), never the watch's, though it is 127.0.0.2's oldest. The watch, idle for ten times every timeout
    meanwhile, still delivers the events of an instancetype edit."""
    async with serve(fake, tmp_path, vms=3) as srv:
        site = srv.server.site
        assert site is not None
        events: list[dict[str, Any]] = []
        silent: list[socket.socket] = []
        connector = aiohttp.TCPConnector(ssl=client_ssl(srv.ca_file), local_addr=("127.0.0.2", 0))
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get(srv.url + WATCH) as resp,
        ):
            assert resp.status == 200

            async def read() -> None:
                async for line in resp.content:
                    if line.strip():
                        events.append(json.loads(line))

            reader = asyncio.create_task(read())
            try:
                await eventually(lambda: len(events) == 3)  # the initial ADDED events
                rounds = 0
                quiet_until = time.monotonic() + 10 * TIMEOUT
                while time.monotonic() < quiet_until:
                    while (held := site.table.open) < 3:
                        address = ("127.0.0.1", srv.server.port)
                        silent.append(socket.create_connection(address, source_address=("127.0.0.2", 0)))
                        await eventually(lambda held=held: site.table.open == held + 1)
                    assert await asyncio.to_thread(livez, srv) == 200
                    rounds += 1
                    assert site.table.displaced == rounds
                    await asyncio.sleep(
                        TIMEOUT
                    )  # the watch idling past every timeout: the behaviour under test
                assert rounds >= 3 and len(events) == 3 and not reader.done()
                fake.update(instancetype("small", cpus=4))
                await eventually(lambda: len(events) == 6)
            finally:
                reader.cancel()
                for sock in silent:
                    sock.close()
        assert [e["type"] for e in events[3:]] == ["MODIFIED"] * 3
        assert {e["object"]["summary"]["cpu"]["vcpus"] for e in events[3:]} == {4}


async def test_a_watch_whose_client_takes_nothing_is_cut_after_the_body_timeout(
    fake: FakeKube, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A watch client with a small receive window that reads nothing: the server's initial events (30
    VMs of 200 KB each: more than the 4 MiB the kernel's send buffer grows to) stall, and the connection
    is closed --body-timeout later."""
    caplog.set_level(logging.INFO, logger="apiserver.http.transport.connections")
    async with serve(fake, tmp_path, vms=30, annotation=200_000) as srv:
        site = srv.server.site
        assert site is not None
        tls = await asyncio.to_thread(tls_from, srv, "127.0.0.2", 8192)
        with tls:
            tls.sendall(f"GET {WATCH} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            started = time.monotonic()
            await eventually(lambda: site.table.connections.held_by("127.0.0.2") == 0, within=10)
            closed_after = time.monotonic() - started
        assert TIMEOUT <= closed_after < patience(5)
        assert any("took nothing of an answer" in r.getMessage() for r in caplog.records)
        # The server goes on serving (the place is free again).
        assert await asyncio.to_thread(livez, srv) == 200
