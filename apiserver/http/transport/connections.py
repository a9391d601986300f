"""Connection limits, as servers built on k8s.io/apiserver have them, and aiohttp's parser errors as Statuses.

aiohttp alone waits for request headers forever, keeps an idle keep-alive connection for an hour and
accepts any number of connections (each idle TLS connection holds memory), so a client could hold a
replica's memory with connections that send nothing. Here:

- every connection is counted from the moment it is accepted, before its TLS handshake: a connection
  that never sends a byte holds a place like any other;
- at most ``max_connections`` connections are open, at most ``max_handshakes`` of them in their TLS
  handshake (~80 KiB each; the others wait for a place, unread, at a few KiB each), which must end within
  ``handshake_timeout`` of the accept (the 10 s that client-go and the aggregator's transport give it);
- when either is full, a connection from a peer holding fewer places takes the place of the largest
  holder's oldest connection that is in its handshake or waiting for a request
  (:mod:`apiserver.http.transport.fairpool`): one source cannot lock out the others. A connection that finds no
  place is closed at once, before any TLS (a 503 would cost a handshake each: what a flood of refused
  connections would spend the server's time on), and counted in one warning line every 10 s. A
  connection that finds no handshake place waits for one;
- the request headers must arrive within the header timeout (k8s.io/apiserver: ``ReadHeaderTimeout`` 32 s),
  counted from the connection's start and from the first byte of each later request;
- a peer whose requests keep being refused for their credentials (401, or 429 for TokenReviews it may
  not have) beyond ``REFUSALS_PER_SECOND`` has the connection closed after the answer and its new
  connections closed at their accept for ``PENALTY`` seconds: such a flood then costs an accept per
  attempt, not a request's work each (:func:`refused_credentials`);
- an answer must be taken by its client: a large one (over ``WRITE_PIECE``) within ``--body-timeout`` plus a
  second per ``--min-body-rate`` bytes of it, and a streamed one (a watch's events, a long list) may not
  stall, its client taking nothing, for longer than ``--body-timeout``. A watch with nothing to send is
  not a slow reader: it writes nothing, so it never stalls, and a connection serving a request is never
  displaced, however long the request lasts;
- an idle keep-alive connection is closed after the idle timeout (default 120 s: longer than the 90 s for
  which the aggregator's Go transport keeps idle connections, so the aggregator always closes first and
  never sends a request on a connection the server is closing at that moment).

Errors of aiohttp's request parser (bad ``Content-Length``, control bytes in headers, too many or too long
headers, unknown methods) are answered as a JSON ``Status`` and logged as one warning line, not a
traceback.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import ipaddress
import logging
import ssl
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_exceptions import BadHttpMethod, LineTooLong
from aiohttp.payload import BytesPayload
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from apiserver.auth.reviewlimits import TokenBuckets
from apiserver.http.errors import StatusError, status_response
from apiserver.http.logging import escape
from apiserver.http.transport.budget import DEFAULT_PACE, BodyPace, run_after_sent
from apiserver.http.transport.fairpool import FairPool
from apiserver.render.kubernetes.errors import status

_log = logging.getLogger(__name__)

# asyncio's TLS layer reads the socket into a buffer of ``SSLProtocol.max_size`` bytes per connection,
# 256 KiB by default: most of what an idle TLS connection costs (about 290 KB in all). A TLS record
# holds at most 16 KiB, so reading 32 KiB at a time takes in two whole records per call.
TLS_READ_BUFFER = 32 * 1024
# At most one warning line per kind of refusal per this many seconds (with a count).
_WARN_EVERY = 10.0
# Requests a peer may have refused for their credentials, a second (bursts of twice as many), before
# its connections are refused for PENALTY seconds. A client with a bad token retrying stays far below.
REFUSALS_PER_SECOND = 20.0
PENALTY = 1.0
_MAX_PENALIZED = 4096


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """``--read-header-timeout``, ``--idle-timeout``, ``--max-connections``, ``--tls-handshake-timeout``,
    ``--max-tls-handshakes`` (defaults in Settings)."""

    header_timeout: float
    idle_timeout: float
    max_connections: int
    handshake_timeout: float = 10.0
    max_handshakes: int = 250
    # How fast a large answer must be read by the client (``--body-timeout``, ``--min-body-rate``).
    pace: BodyPace = DEFAULT_PACE


def peer_of(transport: asyncio.BaseTransport) -> str:
    """Whom a connection counts against: its IPv4 address, or the /64 of an IPv6 one (a host is given a
    whole /64, so its addresses count as one peer)."""
    peer = transport.get_extra_info("peername")
    host = peer[0] if isinstance(peer, tuple) and peer else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return str(host)
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return host


class Connection:
    """One accepted connection: its peer, its transport, and where it stands (waiting for a handshake
    place, in its TLS handshake, then served by its handler)."""

    __slots__ = ("__weakref__", "accepted", "handler", "handshaking", "peer", "queued", "timer", "transport")

    def __init__(self, peer: str, transport: asyncio.Transport, accepted: float) -> None:
        self.peer = peer
        self.transport = transport
        self.accepted = accepted  # loop time
        self.handshaking = False
        self.queued = False
        self.timer: asyncio.TimerHandle | None = None
        self.handler: GuardedHandler | None = None

    def displaceable(self) -> bool:
        """Before or in its handshake, or waiting for a request (never while one is being answered)."""
        if self.handshaking or self.queued:
            return True
        handler = self.handler
        return handler is not None and handler.waiting()


class _Warnings:
    """One warning line per kind (a fixed text with a ``%d`` for the count) per period, naming the peer
    of the latest occurrence."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._last: dict[str, float] = {}

    def note(self, text: str, peer: str = "") -> None:
        self._counts[text] = self._counts.get(text, 0) + 1
        now = time.monotonic()
        if now - self._last.get(text, -_WARN_EVERY) >= _WARN_EVERY:
            _log.warning(text + (" (the latest: %s)" if peer else "%s"), self._counts[text], peer)
            self._counts[text], self._last[text] = 0, now


class ConnectionTable:
    """The open connections and the TLS handshakes under way, each a :class:`FairPool`; counts of what
    was refused or displaced."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.connections: FairPool[Connection] = FairPool(limits.max_connections)
        self.handshakes: FairPool[Connection] = FairPool(limits.max_handshakes)
        self.refused = 0  # no place, or the peer is penalized: closed at once
        self.displaced = 0  # let go for a peer holding fewer places
        self._warnings = _Warnings()
        self.queue: deque[Connection] = deque()  # waiting for a handshake place, oldest first
        self._refusals = TokenBuckets(REFUSALS_PER_SECOND, int(2 * REFUSALS_PER_SECOND))
        self._penalized: dict[str, float] = {}  # peer -> until (time.monotonic)

    @property
    def open(self) -> int:
        return self.connections.size

    def _place(self, pool: FairPool[Connection], conn: Connection) -> bool:
        if pool.full():
            victim = pool.victim(conn.peer)
            if victim is None:
                return False
            self.displaced += 1
            self._warnings.note(
                "closed %d connection(s) of the peer holding the most places, not serving a request, to "
                "make room for other peers",
                victim.peer,
            )
            self.drop(victim)
            victim.transport.abort()
        pool.add(conn.peer, conn)
        return True

    def admit(self, conn: Connection) -> bool:
        """Give ``conn`` a place among the open connections (displacing another when fair), or False."""
        if self._penalized and self._penalized.get(conn.peer, 0.0) > time.monotonic():
            self.refused += 1
            return False
        if self._place(self.connections, conn):
            return True
        self.refused += 1
        limit = self.limits.max_connections
        self._warnings.note(
            f"refused %d connection(s) over the limit of {limit} open connections (--max-connections)"
        )
        return False

    def note_waited_too_long(self) -> None:
        self.refused += 1
        self._warnings.note(
            "closed %d connection(s) that waited --tls-handshake-timeout for one of the "
            f"{self.limits.max_handshakes} TLS handshake places (--max-tls-handshakes)"
        )

    def note_refusal(self, peer: str) -> bool:
        """A request of ``peer`` was refused for its credentials. True when that was one too many: the
        connection is to close after the answer, and ``peer`` is refused at accept for a while."""
        if self._refusals.take(peer):
            return False
        now = time.monotonic()
        if len(self._penalized) >= _MAX_PENALIZED:
            self._penalized = {p: until for p, until in self._penalized.items() if until > now}
        self._penalized[peer] = now + PENALTY
        self._warnings.note(
            f"refused a peer's connections for {PENALTY:g}s %d time(s): more than {REFUSALS_PER_SECOND:g} of "
            "its requests a second were refused for their credentials",
            peer,
        )
        return True

    def start_handshake(self, conn: Connection) -> bool:
        """Give ``conn`` a place among the TLS handshakes under way, or False (it waits for one)."""
        if self._place(self.handshakes, conn):
            conn.handshaking = True
            return True
        return False

    def end_handshake(self, conn: Connection) -> None:
        if conn.handshaking:
            conn.handshaking = False
            self.handshakes.discard(conn.peer, conn)

    def enqueue(self, conn: Connection, *, first: bool = False) -> None:
        """``conn`` waits for a handshake place (``first``: back at the head of the queue)."""
        conn.queued = True
        if first:
            self.queue.appendleft(conn)
        else:
            self.queue.append(conn)

    def dequeue(self) -> Connection | None:
        """The connection that has waited longest for a handshake place, or None."""
        while self.queue:
            conn = self.queue.popleft()
            if conn.queued:
                conn.queued = False
                return conn
        return None

    def drop(self, conn: Connection) -> None:
        """``conn`` is closed (or about to be): free its places. Idempotent."""
        self.end_handshake(conn)
        conn.queued = False  # left in the queue, skipped when its turn comes
        if conn.timer is not None:
            conn.timer.cancel()
            conn.timer = None
        self.connections.discard(conn.peer, conn)

    def abort_handshakes(self) -> None:
        """Shutting down: close every connection in or waiting for its handshake (aiohttp knows only
        the others)."""
        for conn in [*self.handshakes.members(), *(c for c in self.queue if c.queued)]:
            self.drop(conn)
            conn.transport.abort()
        self.queue.clear()


class _Accepted(asyncio.Protocol):
    """A connection just accepted, before anything is read from it: counted at once, then handed to
    the TLS layer (or, without TLS, straight to its handler)."""

    def __init__(self, listener: _Listener) -> None:
        self._listener = listener

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._listener.accepted(transport)


class _Listener:
    """What a listening socket does with each connection it accepts (one per site)."""

    def __init__(
        self,
        server: web.Server,
        loop: asyncio.AbstractEventLoop,
        limits: ConnectionLimits,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        self.server = server
        self.loop = loop
        self.limits = limits
        self.ssl_context = ssl_context
        self.table = ConnectionTable(limits)

    def protocol(self) -> asyncio.Protocol:
        return _Accepted(self)

    def handler(self, conn: Connection) -> GuardedHandler:
        # auto_decompress off: a compressed body is refused with 415 (bodies.py), not inflated.
        return GuardedHandler(
            self.server,
            loop=self.loop,
            access_log=None,
            auto_decompress=False,
            limits=self.limits,
            connection=conn,
            table=self.table,
        )

    def accepted(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        conn = Connection(peer_of(transport), transport, self.loop.time())
        table = self.table
        # No place: closed at once, before any TLS. (An answer would cost a handshake, which is what a
        # flood of refused connections would then spend the server's time on.)
        if not table.admit(conn):
            transport.abort()
            return
        if self.ssl_context is None:
            handler = self.handler(conn)
            transport.set_protocol(handler)
            handler.connection_made(transport)
            return
        if table.start_handshake(conn):
            self._handshake(conn, self.limits.handshake_timeout)
            return
        # Every handshake place is taken (a burst of new connections, or a flood of silent ones from
        # peers holding their share): it waits for one, unread, its handshake time running.
        transport.pause_reading()
        table.enqueue(conn)
        conn.timer = self.loop.call_later(self.limits.handshake_timeout, self._waited_too_long, conn)

    def _handshake(self, conn: Connection, timeout: float) -> None:
        assert self.ssl_context is not None
        waiter = self.loop.create_future()
        # What loop.create_server(ssl=...) does for each connection, here after the connection was counted.
        tls = asyncio.sslproto.SSLProtocol(
            self.loop,
            self.handler(conn),
            self.ssl_context,
            waiter,
            server_side=True,
            ssl_handshake_timeout=timeout,  # type: ignore[arg-type]  # a float works
        )
        transport = conn.transport
        transport.set_protocol(tls)
        tls.connection_made(transport)
        transport.resume_reading()  # a no-op unless it waited for its place
        waiter.add_done_callback(lambda done: self._handshake_ended(conn, done))

    def _handshake_ended(self, conn: Connection, waiter: asyncio.Future[None]) -> None:
        """Handshake over: its place goes to the connection that waited longest; a failed one frees the
        connection's place too (its handler never saw it, so nothing else will)."""
        table = self.table
        table.end_handshake(conn)
        failed = waiter.cancelled() or waiter.exception() is not None
        if failed or conn.handler is None:
            table.drop(conn)
        while (waiting := table.dequeue()) is not None:
            if waiting.timer is not None:
                waiting.timer.cancel()
                waiting.timer = None
            left = waiting.accepted + self.limits.handshake_timeout - self.loop.time()
            if left <= 0:
                self._close_waiting(waiting)
                continue
            if not table.start_handshake(waiting):  # the place went to a newcomer meanwhile
                table.enqueue(waiting, first=True)
                waiting.timer = self.loop.call_at(
                    waiting.accepted + self.limits.handshake_timeout, self._waited_too_long, waiting
                )
                return
            self._handshake(waiting, left)
            return

    def _waited_too_long(self, conn: Connection) -> None:
        conn.timer = None
        if conn.queued:
            self._close_waiting(conn)

    def _close_waiting(self, conn: Connection) -> None:
        self.table.drop(conn)
        conn.transport.abort()
        self.table.note_waited_too_long()


def refused_credentials(request: BaseRequest) -> bool:
    """Note that ``request`` was refused for its credentials; True when its connection is to close after
    the answer (its peer is refusing too often, see :meth:`ConnectionTable.note_refusal`)."""
    handler = request.protocol
    return isinstance(handler, GuardedHandler) and handler.table.note_refusal(handler.connection.peer)


class _Pieces(BytesPayload):
    """A large answer written a piece at a time, each once the connection has taken the one before:
    aiohttp writes a body in one call, which copies all of it, encrypted, into the connection's buffer,
    where a client that does not read keeps it. This way a connection holds at most about two pieces
    beyond the body itself (which the response cache often shares)."""

    async def write(self, writer: AbstractStreamWriter) -> None:
        view = memoryview(self._value)
        for start in range(0, len(view), WRITE_PIECE):
            await writer.write(view[start : start + WRITE_PIECE])


# Answers larger than this are written in pieces of this size, under a deadline (GuardedHandler).
WRITE_PIECE = 64 * 1024


class GuardedHandler(RequestHandler):
    """aiohttp's connection handler with a header-read timeout, its place in the connection table, a
    deadline for writing large answers, and Status errors."""

    __slots__ = (
        "_connection",
        "_header_count",
        "_header_timer",
        "_limits",
        "_on_lost",
        "_stall_timer",
        "_table",
    )
    # The request's after-sent callbacks run here (budget.after_sent).
    runs_after_sent = True

    def __init__(
        self,
        manager: web.Server,
        *,
        limits: ConnectionLimits,
        connection: Connection,
        table: ConnectionTable,
        **kw: Any,
    ) -> None:
        super().__init__(manager, keepalive_timeout=limits.idle_timeout, **kw)
        self._limits = limits
        self._connection = connection
        self._table = table
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_count = 0
        self._stall_timer: asyncio.TimerHandle | None = None
        self._on_lost: list[Callable[[], None]] = []

    def when_lost(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the connection is lost (a client gone away in the middle of a watch,
        which writes nothing for minutes and would not notice otherwise); returns what unregisters it."""
        self._on_lost.append(callback)

        def forget() -> None:
            if callback in self._on_lost:
                self._on_lost.remove(callback)

        return forget

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._connection.handler = self
        super().connection_made(transport)
        self._arm()

    @property
    def table(self) -> ConnectionTable:
        return self._table

    @property
    def connection(self) -> Connection:
        return self._connection

    def waiting(self) -> bool:
        """Waiting for a request: nothing being answered, nothing parsed and queued (headers may be
        arriving)."""
        return not self._request_in_progress and not self._messages

    def _arm(self) -> None:
        """Start the header timer for the request whose first bytes are arriving now."""
        if self._header_timer is None and self._limits.header_timeout > 0:
            self._header_count = self._request_count
            self._header_timer = self._loop.call_later(self._limits.header_timeout, self._headers_late)

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._request_count == self._header_count and not self._request_in_progress and not self._messages:
            transport = self.transport
            self.force_close()
            if transport is not None:
                transport.close()

    def data_received(self, data: bytes) -> None:
        # Bytes arriving while the connection waits for its next request start one: time its headers.
        # (Not while a request is handled or about to be: those are its body, or a pipelined request,
        # which the idle timeout bounds.)
        waiter = self._waiter
        if self._header_timer is None and waiter is not None and not waiter.done():
            self._arm()
        super().data_received(data)
        timer = self._header_timer
        if timer is not None and self._request_count != self._header_count:
            timer.cancel()
            self._header_timer = None

    async def finish_response(
        self, request: BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        """Write the answer; a large one in pieces, and it must be read at the pace of ``--min-body-rate``
        or the connection is closed. Then the request's after-sent callbacks (its bytes are given back)."""
        timer = None
        try:
            if (
                isinstance(resp, web.Response)
                and isinstance(body := resp.body, bytes)
                and len(body) > WRITE_PIECE
                and request.method != "HEAD"
            ):
                resp.body = _Pieces(body)
                late = self._limits.pace.deadline(self._loop.time(), len(body))
                timer = self._loop.call_at(late, self._write_late, len(body))
            return await super().finish_response(request, resp, start_time)
        finally:
            if timer is not None:
                timer.cancel()
            run_after_sent(request)

    def _write_late(self, size: int) -> None:
        _log.info(
            "closed a connection from %s: its client did not read an answer of %d bytes in time",
            self._connection.peer,
            size,
        )
        transport = self.transport
        self.force_close()
        if transport is not None:
            transport.abort()

    def pause_writing(self) -> None:
        """The client has stopped taking what is written to it. A streamed answer (a watch's events, a
        long list) has no size to set a deadline by: it may stay stalled for ``--body-timeout``, no
        longer, or the connection is closed. A watch with nothing to send writes nothing, so an idle
        watch never stalls, however long it lasts."""
        super().pause_writing()
        if self._stall_timer is None:
            self._stall_timer = self._loop.call_later(self._limits.pace.timeout, self._write_stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _write_stalled(self) -> None:
        self._stall_timer = None
        _log.info(
            "closed a connection from %s: its client took nothing of an answer for %gs (--body-timeout)",
            self._connection.peer,
            self._limits.pace.timeout,
        )
        transport = self.transport
        self.force_close()
        if transport is not None:
            transport.abort()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._table.drop(self._connection)
        lost, self._on_lost = self._on_lost, []
        for callback in lost:
            callback()
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        if self._manager is None:  # already lost, or never made
            return
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """A Status instead of aiohttp's text page, and one warning line instead of a traceback."""
        first = _what(status, exc, message)
        _log.warning("bad request from %s: %d %s", escape(str(request.remote)), status, escape(first))
        if request.writer.output_size > 0:
            raise ConnectionError("the response was already sent in part")
        reason = _REASONS.get(status, "BadRequest" if status < 500 else "InternalError")
        response = status_response(StatusError(_error_status(status, reason, first)))
        response.force_close()
        return response


def _what(code: int, exc: BaseException | None, message: str | None) -> str:
    """One clean line on what the parser refused: its own first line, without the quoted bytes
    (Python's ``b'...'`` text) it adds to some."""
    if isinstance(exc, LineTooLong):
        return "the request line or a header is longer than the limit of 8190 bytes"
    if isinstance(exc, BadHttpMethod):
        return "the request does not start with a valid method"
    text = message or (str(exc) if exc is not None else "")
    lines = text.strip().splitlines()
    first = lines[0].strip().rstrip(":").strip() if lines else ""
    if not first or "b'" in first or 'b"' in first:
        try:
            first = HTTPStatus(code).phrase
        except ValueError:
            first = "bad request"
    return first[:256]


_REASONS = {
    400: "BadRequest",
    413: "RequestEntityTooLarge",
    417: "ExpectationFailed",
    431: "RequestHeaderFieldsTooLarge",
    501: "NotImplemented",
    500: "InternalError",
    504: "Timeout",
}


def _error_status(code: int, reason: str, detail: str) -> dict[str, Any]:
    if code == 500:
        return status(500, reason, "Internal error occurred: the request could not be served")
    return status(code, reason, f"the request could not be read: {detail}")


class GuardedSite(web.TCPSite):
    """A TCP site that counts each connection from its accept (:class:`ConnectionTable`), does the TLS
    handshake itself under the handshake limits, then serves it with a :class:`GuardedHandler`."""

    __slots__ = ("_limits", "listener")

    def __init__(self, runner: web.BaseRunner, *args: Any, limits: ConnectionLimits, **kw: Any) -> None:
        super().__init__(runner, *args, **kw)
        self._limits = limits
        self.listener: _Listener | None = None

    @property
    def table(self) -> ConnectionTable:
        assert self.listener is not None, "the site has not started"
        return self.listener.table

    async def start(self) -> None:
        if self._ssl_context is not None:
            # Class-wide (asyncio offers no per-server setting): the cluster client's TLS reads
            # use the smaller buffer as well, which costs them nothing measurable.
            asyncio.sslproto.SSLProtocol.max_size = min(
                asyncio.sslproto.SSLProtocol.max_size, TLS_READ_BUFFER
            )
        await web.BaseSite.start(self)
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None
        self.listener = listener = _Listener(server, loop, self._limits, self._ssl_context)
        # A plain TCP server: the listener adds TLS to each connection once it has counted it.
        self._server = await loop.create_server(
            listener.protocol,
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_address=self._reuse_address,
            reuse_port=self._reuse_port,
        )
        self._bound_port = self._server.sockets[0].getsockname()[1] if self._server.sockets else self._port

    async def stop(self) -> None:
        if self.listener is not None:
            self.listener.table.abort_handshakes()
        await super().stop()
