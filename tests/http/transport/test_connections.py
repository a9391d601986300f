"""Connection limits and what aiohttp's request parser refuses (issue 12): a read-header timeout, an idle
keep-alive timeout, a cap on open connections, parser errors, ``Expect`` and ``Content-Encoding`` answered
as Statuses and logged as one warning line; control characters escaped in text log lines.

Raw TLS sockets, because these are about bytes on the wire that a well-behaved client never sends.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import socket
import ssl
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from apiserver.http.keys import PIPELINE
from apiserver.http.logging import BatchingStreamHandler, TextFormatter, escape
from apiserver.sources.base import Check
from tests.support.http_helpers import (
    EXAMPLES,
    MemorySource,
    RunningServer,
    client_ssl,
    put_path,
    running_server,
    vm_path,
)
from tests.support.patience import patience
from tests.support.waiting import eventually, eventually_value, poll


def _connect(server: RunningServer, source: str = "127.0.0.1") -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", server.server.port), timeout=20, source_address=(source, 0))
    return client_ssl(server.ca_file).wrap_socket(raw, server_hostname="127.0.0.1")


def _read_reply(tls: ssl.SSLSocket) -> bytes:
    """One response (headers and a Content-Length body), or b'' when the server closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = tls.recv(65536)
        except (ConnectionResetError, ssl.SSLError):
            return data
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = tls.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _closed(tls: ssl.SSLSocket) -> bool:
    """Whether the server closed the connection (the socket's own timeout bounds the wait)."""
    try:
        return tls.recv(1) == b""
    except (ConnectionResetError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
        return True
    except TimeoutError:
        return False


def _status(reply: bytes) -> tuple[int, dict[str, object], bytes]:
    head, _, body = reply.partition(b"\r\n\r\n")
    code = int(head.split(b" ", 2)[1])
    return code, json.loads(body), head


@pytest.fixture
def source() -> MemorySource:
    from apiserver.documents.manifests import read_manifest_paths

    return MemorySource([obj for _, obj in read_manifest_paths([str(EXAMPLES)])])


def _get_livez(tls: ssl.SSLSocket) -> bytes:
    tls.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
    return _read_reply(tls)


async def test_partial_headers_are_cut_off_after_the_header_timeout(
    source: MemorySource, tmp_path: Path
) -> None:
    async with running_server(source, tmp_path, header_timeout=0.5, idle_timeout=30) as server:

        def slowloris() -> tuple[bool, float]:
            with _connect(server) as tls:
                tls.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                started = time.monotonic()
                return _closed(tls), time.monotonic() - started

        def silent() -> bool:
            with _connect(server) as tls:
                return _closed(tls)

        def slow_but_in_time() -> bytes:
            with _connect(server) as tls:
                tls.sendall(b"GET /livez HTTP/1.1\r\n")
                time.sleep(0.1)  # headers arriving slowly, but within the timeout: the behaviour under test
                tls.sendall(b"Host: x\r\n\r\n")
                return _read_reply(tls)

        def no_tls_handshake() -> bool:
            with socket.create_connection(("127.0.0.1", server.server.port), timeout=20) as raw:
                try:
                    return raw.recv(1) == b""
                except ConnectionResetError:
                    return True

        closed, waited = await asyncio.to_thread(slowloris)
        assert closed
        print(f"\npartial headers closed after {waited:.2f}s (--read-header-timeout 0.5s)")
        assert await asyncio.to_thread(silent)  # a connection that never sends a byte, too
        assert await asyncio.to_thread(no_tls_handshake)  # and one that never starts TLS
        assert (await asyncio.to_thread(slow_but_in_time)).startswith(b"HTTP/1.1 200")


async def test_idle_keep_alive_connection_is_closed_after_the_idle_timeout(
    source: MemorySource, tmp_path: Path
) -> None:
    async with running_server(source, tmp_path, header_timeout=0.5, idle_timeout=3) as server:

        def keep_alive() -> tuple[bytes, bytes, bool, float]:
            with _connect(server) as tls:
                first = _get_livez(tls)
                # Idle for longer than the header timeout: the header timer is for requests under way,
                # not for idle connections.
                time.sleep(1.2)
                second = _get_livez(tls)
                started = time.monotonic()
                closed = _closed(tls)
                return first, second, closed, time.monotonic() - started

        first, second, closed, waited = await asyncio.to_thread(keep_alive)
        assert first.startswith(b"HTTP/1.1 200") and second.startswith(b"HTTP/1.1 200")
        assert closed
        print(f"\nidle connection closed after {waited:.2f}s (--idle-timeout 3s)")


async def test_a_connection_over_the_cap_is_closed_before_tls(source: MemorySource, tmp_path: Path) -> None:
    """Over --max-connections, from the peer holding every place (none to give up its place to it):
    closed at once, with no TLS handshake spent on it, and one warning line."""
    head = (
        f"PUT {put_path()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
    )
    with _warnings_captured() as log:
        async with running_server(source, tmp_path, max_connections=2) as server:
            first = await asyncio.to_thread(_connect, server)
            second = await asyncio.to_thread(_connect, server)
            dispatcher = server.server.app[PIPELINE]
            dispatched = dispatcher.dispatched
            try:
                for tls in (first, second):  # a request under way on each: half a body sent
                    await asyncio.to_thread(tls.sendall, (head + "{").encode())
                # Both requests being handled: neither connection may give its place up.
                await eventually(lambda: dispatcher.dispatched == dispatched + 2)
                with pytest.raises((ConnectionError, ssl.SSLError)):
                    await asyncio.to_thread(_connect, server)  # the handshake meets a closed connection
                await asyncio.to_thread(first.sendall, b"}")
                assert (await asyncio.to_thread(_read_reply, first)).startswith(b"HTTP/1.1 422")  # no spec
            finally:
                first.close()

            # Once one closes, a new connection is admitted again.
            def livez_again() -> bytes:
                try:
                    with _connect(server) as again:
                        return _get_livez(again)
                except (ConnectionError, ssl.SSLError):
                    return b""

            await eventually_value(
                lambda: asyncio.to_thread(livez_again), lambda reply: reply.startswith(b"HTTP/1.1 200"), 10
            )
            second.close()
            assert server.server.site is not None and server.server.site.table.refused >= 1
    warnings = [line for line in log.getvalue().splitlines() if "refused" in line]
    assert warnings[0].endswith(
        "refused 1 connection(s) over the limit of 2 open connections (--max-connections)"
    )


def _silent(port: int, count: int, source: str) -> list[socket.socket]:
    """TCP connections that never send a byte (not even a TLS ClientHello)."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
        socks.append(sock)
    return socks


async def test_connections_count_from_their_accept_and_silent_ones_end_with_the_handshake_timeout(
    source: MemorySource, tmp_path: Path
) -> None:
    """Issue 15, item 5: connections that never start TLS hold places from their accept; three of them
    in a TLS handshake (--max-tls-handshakes), the others waiting for a handshake place, unread; all for
    at most --tls-handshake-timeout. Another peer still gets in, and through its handshake."""
    async with running_server(
        source, tmp_path, max_connections=6, max_handshakes=3, handshake_timeout=1.0
    ) as server:
        site = server.server.site
        assert site is not None
        table = site.table
        socks = await asyncio.to_thread(_silent, server.server.port, 8, "127.0.0.2")
        try:
            await eventually(lambda: table.refused >= 2, 10)  # the two beyond the six places
            waiting = [c for c in table.queue if c.queued]
            assert (table.open, table.handshakes.size, len(waiting)) == (6, 3, 3)
            assert table.connections.held_by("127.0.0.2") == 6
            # Another peer: its connection takes the place of the oldest of 127.0.0.2's (one in its
            # handshake, so a handshake place is free for it too), and it is answered.
            with await asyncio.to_thread(_connect, server) as tls:
                assert (await asyncio.to_thread(_get_livez, tls)).startswith(b"HTTP/1.1 200")
            assert table.displaced == 1
            # The silent ones are closed once their handshake time is up, in a handshake or not.
            started = time.monotonic()
            await eventually(lambda: table.open == 0, 5)
            assert all(await asyncio.to_thread(lambda: [_closed_raw(s) for s in socks]))
            print(
                f"\nsilent connections closed {time.monotonic() - started:.2f}s later (--tls-handshake-timeout 1s)"
            )
        finally:
            for sock in socks:
                sock.close()


async def test_a_burst_of_connections_waits_for_handshake_places_instead_of_being_refused(
    source: MemorySource, tmp_path: Path
) -> None:
    """Twenty connections at once from one peer, two handshake places: each waits its turn, none is
    refused (a burst of the aggregator's must not turn into 503s)."""
    async with running_server(source, tmp_path, max_handshakes=2, handshake_timeout=10.0) as server:

        def one(_: int) -> bytes:
            with _connect(server) as tls:
                return _get_livez(tls)

        with ThreadPoolExecutor(20) as pool:
            replies = await asyncio.to_thread(lambda: list(pool.map(one, range(20))))
        assert all(r.startswith(b"HTTP/1.1 200") for r in replies)
        site = server.server.site
        assert site is not None and site.table.refused == 0


def _closed_raw(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, TimeoutError):
        return True


async def test_probes_are_answered_while_another_peer_holds_every_connection(
    source: MemorySource, tmp_path: Path
) -> None:
    """Issue 15, item 6: 127.0.0.2 holds all four places with TLS connections it never uses; the kubelet
    (127.0.0.1) opens a new connection per probe. The API port gives it the place of one of 127.0.0.2's
    idle connections; the probe port answers regardless. 127.0.0.2 itself gets no more places."""
    async with running_server(
        source, tmp_path, max_connections=4, health_probe_bind_address="127.0.0.1:0"
    ) as server:
        site = server.server.site
        probe_port = server.server.probe_port
        assert site is not None and probe_port
        held = [await asyncio.to_thread(_connect, server, "127.0.0.2") for _ in range(4)]
        try:
            assert site.table.open == 4
            with pytest.raises((ConnectionError, ssl.SSLError)):
                await asyncio.to_thread(_connect, server, "127.0.0.2")
            for _ in range(3):
                with await asyncio.to_thread(_connect, server) as tls:
                    assert (await asyncio.to_thread(_get_livez, tls)).startswith(b"HTTP/1.1 200")
                assert await _probe(probe_port, "/readyz") == (200, b"ok")
                assert await _probe(probe_port, "/livez") == (200, b"ok")
            # One place given up: after it, 127.0.0.2 holds three and the pool has room again.
            assert (site.table.displaced, site.table.connections.held_by("127.0.0.2")) == (1, 3)
        finally:
            for tls in held:
                tls.close()


async def _probe(port: int, path: str) -> tuple[int, bytes]:
    """What a kubelet's httpGet probe sends: plain HTTP, a new connection, Connection: close."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: kube-probe/1.28\r\n"
        "Accept: */*\r\nConnection: close\r\n\r\n".encode()
    )
    reply = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


async def test_the_probe_port_answers_health_alone_and_withholds_reasons(tmp_path: Path) -> None:
    checks = [
        Check("memory", True, "12 objects"),
        Check("cache-vms", False, "forbidden: system:serviceaccount:x"),
    ]
    source = MemorySource(check_list=checks)
    async with running_server(source, tmp_path, health_probe_bind_address="127.0.0.1:0") as server:
        port = server.server.probe_port
        assert port
        assert await _probe(port, "/livez") == (200, b"ok")
        code, body = await _probe(port, "/readyz?verbose")
        assert code == 500
        assert body.decode().splitlines() == [
            "[+]ping ok",
            "[+]shutdown ok",
            "[+]memory ok",
            "[-]cache-vms failed: reason withheld",
            "readyz check failed",
        ]
        assert (await _probe(port, "/readyz?exclude=cache-vms"))[0] == 200
        assert (await _probe(port, "/healthz/memory"))[0] == 200
        for path in (vm_path(), "/metrics", "/openapi/v2", "/apis"):
            assert (await _probe(port, path))[0] == 404
        # Without authentication (this server), the API port shows what the checks say.
        api = await server.get("/readyz?verbose")
        assert "[-]cache-vms failed: forbidden: system:serviceaccount:x" in api.body.decode()
        await server.server.stop()
        # Stopped: nothing listens there any more.
        with pytest.raises(OSError):
            await _probe(port, "/livez")


def test_fair_pool_gives_a_full_pool_s_places_to_peers_holding_fewer() -> None:
    from apiserver.http.transport.fairpool import FairPool

    class M:
        def __init__(self, name: str, busy: bool = False) -> None:
            self.name, self.busy = name, busy

        def displaceable(self) -> bool:
            return not self.busy

        def __repr__(self) -> str:
            return self.name

    pool: FairPool[M] = FairPool(4)
    a = [M(f"a{i}") for i in range(4)]
    for m in a:
        pool.add("A", m)
    assert pool.full() and pool.held_by("A") == 4
    assert pool.victim("A") is None  # a peer never displaces its own
    assert pool.victim("B") is a[0]  # the largest holder's oldest
    pool.discard("A", a[0])
    b1 = M("b1")
    pool.add("B", b1)
    assert pool.victim("B") is a[1]  # A holds 3, B 1: still two more
    pool.discard("A", a[1])
    pool.add("B", M("b2"))
    assert pool.victim("B") is None  # 2 and 2: fair
    assert pool.victim("C") is a[2]
    a[2].busy = True  # answering a request: never let go
    assert pool.victim("C") is a[3]
    a[3].busy = True
    assert pool.victim("C") is b1  # B holds as many as A: its oldest then
    for m in pool.members():
        m.busy = True
    assert pool.victim("C") is None
    assert pool.discard("A", a[0]) is False  # already gone
    for m in pool.members():
        pool.discard("A" if m.name.startswith("a") else "B", m)
    assert (pool.size, pool.peers(), pool.victim("A")) == (0, 0, None)


@contextmanager
def _warnings_captured() -> Iterator[io.StringIO]:
    """The server's log as text lines, as ``serve`` writes it."""
    root = logging.getLogger()
    stream = io.StringIO()
    handler = BatchingStreamHandler(stream)
    handler.setFormatter(TextFormatter())
    saved = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        handler.flush()
        root.removeHandler(handler)
        root.setLevel(saved)


TOO_LONG = "the request line or a header is longer than the limit of 8190 bytes"
BAD_REQUESTS = {
    "bad-content-length": b"PUT /livez HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    "two-content-lengths": b"PUT /livez HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    "control-byte-in-header": b"GET /livez HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n",
    "too-many-headers": b"GET /livez HTTP/1.1\r\nHost: x\r\n"
    + b"".join(b"X-%d: a\r\n" % i for i in range(200))
    + b"\r\n",
    "long-header": b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 10_000 + b"\r\n\r\n",
    "long-request-line": b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    "unknown-method": b"G(T /livez HTTP/1.1\r\nHost: x\r\n\r\n",
}


MESSAGES = {
    "bad-content-length": "Invalid character in Content-Length",
    "two-content-lengths": "Duplicate Content-Length",
    "control-byte-in-header": "Invalid header value char",
    "too-many-headers": "Too many headers received",
    "long-header": TOO_LONG,
    "long-request-line": TOO_LONG,
    "unknown-method": "the request does not start with a valid method",
}


@pytest.mark.parametrize("case", BAD_REQUESTS)
async def test_parser_errors_are_a_status_and_one_warning_line(
    case: str, source: MemorySource, tmp_path: Path
) -> None:
    raw = BAD_REQUESTS[case]
    with _warnings_captured() as log:
        async with running_server(source, tmp_path) as server:

            def send() -> bytes:
                with _connect(server) as tls:
                    tls.sendall(raw)
                    return _read_reply(tls)

            reply = await asyncio.to_thread(send)
    code, body, head = _status(reply)
    assert 400 <= code < 500, reply[:300]
    assert b"Content-Type: application/json" in head
    assert body["kind"] == "Status" and body["code"] == code and body["status"] == "Failure"
    assert body["message"] == f"the request could not be read: {MESSAGES[case]}"
    lines = [line for line in log.getvalue().splitlines() if "bad request" in line or "Traceback" in line]
    assert len(lines) == 1, log.getvalue()
    assert lines[0].endswith(
        f" WARNING apiserver.http.transport.connections: bad request from 127.0.0.1: {code} {MESSAGES[case]}"
    )


async def test_expect_is_answered_before_100_continue(source: MemorySource, tmp_path: Path) -> None:
    async with running_server(source, tmp_path) as server:
        limit = server.server.settings.max_body_bytes

        def send(head: bytes, body: bytes = b"") -> bytes:
            with _connect(server) as tls:
                tls.sendall(head)
                reply = _read_reply(tls)
                if reply.startswith(b"HTTP/1.1 100") and body:
                    tls.sendall(body)
                    reply = reply + _read_reply(tls)
                return reply

        base = f"PUT {put_path()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        big = (base + f"Expect: 100-continue\r\nContent-Length: {limit + 1}\r\n\r\n").encode()
        reply = await asyncio.to_thread(send, big)
        assert not reply.startswith(b"HTTP/1.1 100"), reply
        code, body, _ = _status(reply)
        assert (code, body["reason"]) == (413, "RequestEntityTooLarge")

        odd = (base + "Expect: foo\r\nContent-Length: 2\r\n\r\n").encode()
        code, body, _ = _status(await asyncio.to_thread(send, odd))
        assert (code, body["reason"]) == (417, "ExpectationFailed")
        assert body["message"] == 'unsupported expectation "foo"; only 100-continue'

        vm = (EXAMPLES / "vm-fedora.yaml").read_bytes()
        fine = (
            base.replace("json", "yaml") + f"Expect: 100-continue\r\nContent-Length: {len(vm)}\r\n\r\n"
        ).encode()
        reply = await asyncio.to_thread(send, fine, vm)
        assert reply.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200"), reply[:200]


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "x-whatever"])
async def test_content_encoding_is_refused_with_415(
    encoding: str, source: MemorySource, tmp_path: Path
) -> None:
    import gzip

    async with running_server(source, tmp_path) as server:
        reply = await server.put(
            put_path(),
            data=gzip.compress(b'{"spec": {}}'),
            headers={"Content-Type": "application/json", "Content-Encoding": encoding},
        )
    assert reply.status == 415
    assert reply.json()["message"] == (
        f'the body of the request was encoded with "{encoding}"; only unencoded bodies '
        '(no Content-Encoding, or "identity") are accepted'
    )
    async with running_server(source, tmp_path) as server:
        plain = await server.put(
            put_path(),
            data=b"{}",
            headers={"Content-Type": "application/json", "Content-Encoding": "identity"},
        )
    assert plain.status == 422  # read: a VM without spec


def test_escape() -> None:
    assert escape("/apis/ok") == "/apis/ok"
    assert escape("a\nb\r\x1b[31m\x7f\x85\u2028\\ é") == "a\\x0ab\\x0d\\x1b[31m\\x7f\\x85\\u2028\\\\ é"


async def test_a_forged_line_in_a_path_stays_in_its_own_line(source: MemorySource, tmp_path: Path) -> None:
    forged = "%0A2026-01-01 00:00:00,000 INFO apiserver.access: GET /admin 200 0.1ms user=admin%1B[2J"
    with _warnings_captured() as log:
        async with running_server(source, tmp_path) as server:
            reply = await server.get(vm_path(name="x") + forged)
            assert reply.status == 404
            logging.getLogger("apiserver.auth").warning("user %s refused", "mallory\nINFO forged")
    lines = log.getvalue().splitlines()
    access = [line for line in lines if "apiserver.access" in line]
    assert len(access) == 1, lines
    # The path as sent (escapes kept, as kube-apiserver's audit log keeps requestURI): still one line.
    assert "%0A2026-01-01%2000:00:00,000%20INFO%20apiserver.access:%20GET%20/admin" in access[0]
    assert "%1B" in access[0] and "\x1b" not in log.getvalue()
    assert next(line for line in lines if "refused" in line).endswith("user mallory\\x0aINFO forged refused")


def test_serve_flags_take_kubernetes_durations() -> None:
    import argparse

    from apiserver.cli import serve

    parser = argparse.ArgumentParser()
    serve.add_parser(parser.add_subparsers())
    args = parser.parse_args(
        [
            "serve",
            "--read-header-timeout",
            "1m30s",
            "--idle-timeout",
            "2m0s",
            "--tls-handshake-timeout",
            "500ms",
        ]
    )
    settings = serve.settings_from_args(args)
    assert (settings.header_timeout, settings.idle_timeout, settings.max_connections) == (90.0, 120.0, 1000)
    assert (settings.handshake_timeout, settings.max_handshakes) == (0.5, 250)
    defaults = serve.settings_from_args(parser.parse_args(["serve"]))
    assert (defaults.header_timeout, defaults.idle_timeout, defaults.handshake_timeout) == (32.0, 120.0, 10.0)
    assert defaults.health_probe_bind_address == ""
    for bad in (
        ["--idle-timeout", "0s"],
        ["--read-header-timeout", "soon"],
        ["--max-connections", "0"],
        ["--max-tls-handshakes", "0"],
        ["--tls-handshake-timeout", "0s"],
    ):
        with pytest.raises(SystemExit):
            parser.parse_args(["serve", *bad])
    for address in ("8081", "host:port", ":99999"):
        with pytest.raises(serve.ServeError, match="--health-probe-bind-address"):
            serve.settings_from_args(parser.parse_args(["serve", "--health-probe-bind-address", address]))
    for address, expected in (
        (":8081", (None, 8081)),
        ("[::1]:9", ("::1", 9)),
        ("0.0.0.0:1", ("0.0.0.0", 1)),
    ):
        assert serve.host_port(address) == expected


def test_the_deployment_sets_the_connection_limits() -> None:
    """Stated in the manifests (not only defaults), with the idle timeout above the aggregator's 90 s and
    the memory of the connections at the cap well within the container's memory limit."""
    from tests.project.test_manifests_deploy import OVERLAYS, container, rendered, serve_options

    for overlay in OVERLAYS:
        c = container(rendered(overlay))
        args = c["args"]
        assert {
            "--read-header-timeout=32s",
            "--idle-timeout=2m0s",
            "--max-connections=1000",
            "--tls-handshake-timeout=10s",
            "--max-tls-handshakes=250",
        } <= set(args)
        options = serve_options(args)
        assert options.idle_timeout > 90
        limit = c["resources"]["limits"]["memory"]
        assert limit.endswith("Mi")
        # Every connection idle (~62 KB) and every handshake place taken (~82 KiB, hack/benchmarks/dos.py).
        held = options.max_connections * 62 * 1024 + options.max_tls_handshakes * 82 * 1024
        assert held < int(limit[:-2]) * 1024 * 1024 // 4


async def test_bodies_over_the_bytes_in_flight_get_429(source: MemorySource, tmp_path: Path) -> None:
    async with running_server(source, tmp_path, max_body_bytes=1000, max_body_bytes_in_flight=1500) as server:
        head = (
            f"PUT {put_path()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        ).encode()
        holder = await asyncio.to_thread(_connect, server)
        try:
            await asyncio.to_thread(holder.sendall, head + b"{")  # 1000 bytes declared, one sent
            await eventually_value(  # its 1000 bytes counted
                lambda: server.metric("kubevirt_expand_body_bytes_held"), lambda held: held == 1000
            )

            def second() -> bytes:
                with _connect(server) as tls:
                    tls.sendall(head + b"{" + b" " * 998 + b"}")
                    return _read_reply(tls)

            code, body, headers = _status(await asyncio.to_thread(second))
            assert (code, body["reason"]) == (429, "TooManyRequests")
            assert b"Retry-After: 1" in headers
            await asyncio.to_thread(holder.sendall, b" " * 998 + b"}")
            assert (await asyncio.to_thread(_read_reply, holder)).startswith(
                b"HTTP/1.1 422"
            )  # {} has no spec
        finally:
            holder.close()
        code, _, _ = _status(await asyncio.to_thread(second))
        assert code == 422  # the budget is free again


def test_serve_refuses_a_body_budget_below_one_body(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.support.http_helpers import REPO

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "apiserver.cli",
            "serve",
            "--manifests",
            str(EXAMPLES),
            "--max-body-bytes-in-flight",
            "1Mi",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=patience(60),
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "kubevirt-expand serve: the bytes of bodies in flight must allow at least one body of the limit"
    )


def test_bench_connections_runs(tmp_path: Path) -> None:
    """hack/benchmarks/connections.py works (50 connections: a check that it runs, not the figure)."""
    import re
    import subprocess
    import sys

    from tests.support.http_helpers import REPO

    done = subprocess.run(
        [sys.executable, "-m", "hack.benchmarks.connections", "--connections", "50"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^50 idle TLS connections .* KB per connection\), ", done.stdout, re.M), done.stdout


async def test_a_body_sent_late_does_not_start_a_header_timer(source: MemorySource, tmp_path: Path) -> None:
    """Body bytes arriving while their request is being handled are not the start of a next request: the
    connection then idles past the header timeout and is still served."""
    async with running_server(source, tmp_path, header_timeout=0.5, idle_timeout=10) as server:
        vm = (EXAMPLES / "vm-fedora.yaml").read_bytes()
        dispatcher = server.server.app[PIPELINE]

        def put_then_idle() -> tuple[bytes, bytes]:
            dispatched = dispatcher.dispatched
            with _connect(server) as tls:
                tls.sendall(
                    f"PUT {put_path()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\n"
                    f"Content-Length: {len(vm)}\r\n\r\n".encode()
                )
                # The request is being handled before any of its body arrives.
                poll("the PUT dispatched", lambda: dispatcher.dispatched, lambda n: n > dispatched)
                tls.sendall(vm[:10])
                time.sleep(0.2)  # the body arriving late, in parts: the behaviour under test
                tls.sendall(vm[10:])
                first = _read_reply(tls)
                time.sleep(1.2)  # idle past the header timeout (0.5 s): the behaviour under test
                return first, _get_livez(tls)

        first, second = await asyncio.to_thread(put_then_idle)
        assert first.startswith(b"HTTP/1.1 200"), first[:300]
        assert second.startswith(b"HTTP/1.1 200"), second[:300]
