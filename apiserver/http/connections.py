"""Connection limits, as servers built on k8s.io/apiserver have them, and aiohttp's parser errors as Statuses.

aiohttp alone waits for request headers forever, keeps an idle keep-alive connection for an hour and
accepts any number of connections (each idle TLS connection holds memory), so a client could hold a
replica's memory with connections that send nothing. Here:

- the request headers must arrive within the header timeout (k8s.io/apiserver: ``ReadHeaderTimeout`` 32 s),
  counted from the connection's start and from the first byte of each later request; the TLS handshake
  gets the same time;
- an idle keep-alive connection is closed after the idle timeout (default 120 s: longer than the 90 s for
  which the aggregator's Go transport keeps idle connections, so the aggregator always closes first and
  never sends a request on a connection the server is closing at that moment);
- at most ``max_connections`` connections are open; one more gets a 503 Status and is closed.

Errors of aiohttp's request parser (bad ``Content-Length``, control bytes in headers, too many or too long
headers, unknown methods) are answered as a JSON ``Status`` and logged as one warning line, not a
traceback.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import logging
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod, LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from apiserver.http.errors import StatusError, status_response
from apiserver.http.logging import escape
from apiserver.render.errors import status

_log = logging.getLogger(__name__)

# asyncio's TLS layer reads the socket into a buffer of ``SSLProtocol.max_size`` bytes per connection,
# 256 KiB by default: most of what an idle TLS connection costs (about 290 KB in all). A TLS record
# holds at most 16 KiB, so reading 32 KiB at a time takes in two whole records per call.
TLS_READ_BUFFER = 32 * 1024
# At most one "over the connection cap" warning per this many seconds (with a count).
_WARN_EVERY = 10.0


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """``--header-timeout``, ``--idle-timeout``, ``--max-connections`` (defaults in Settings)."""

    header_timeout: float
    idle_timeout: float
    max_connections: int


class _Refusals:
    """Counts open connections and those refused over the cap; logs one warning line per period, not
    one per refusal."""

    def __init__(self) -> None:
        self.open = 0
        self.total = 0
        self._unlogged = 0
        self._last = -_WARN_EVERY

    def note(self, limit: int) -> None:
        self.total += 1
        self._unlogged += 1
        now = time.monotonic()
        if now - self._last >= _WARN_EVERY:
            _log.warning(
                "refused %d connection(s) over the limit of %d open connections (--max-connections)",
                self._unlogged,
                limit,
            )
            self._unlogged, self._last = 0, now


class GuardedHandler(RequestHandler):
    """aiohttp's connection handler with a header-read timeout, the connection cap and Status errors."""

    __slots__ = ("_header_count", "_header_timer", "_limits", "_refusals")

    def __init__(
        self, manager: web.Server, *, limits: ConnectionLimits, refusals: _Refusals, **kw: Any
    ) -> None:
        super().__init__(manager, keepalive_timeout=limits.idle_timeout, **kw)
        self._limits = limits
        self._refusals = refusals
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_count = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._refusals.open >= self._limits.max_connections:
            self._refuse(transport)
            return
        self._refusals.open += 1
        super().connection_made(transport)
        self._arm()

    def _refuse(self, transport: asyncio.BaseTransport) -> None:
        """Over the cap: a 503 Status (the request is never read) and close."""
        self._manager = None  # connection_lost then does nothing: aiohttp never saw this connection
        limit = self._limits.max_connections
        self._refusals.note(limit)
        body = status(
            503,
            "ServiceUnavailable",
            f"too many open connections (the limit is {limit}); retry later",
            details={"retryAfterSeconds": 1},
        )
        payload = status_response(StatusError(body)).body
        assert isinstance(payload, bytes)
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            f"Connection: close\r\nContent-Length: {len(payload)}\r\n\r\n"
        ).encode()
        if isinstance(transport, asyncio.WriteTransport):
            transport.write(head + payload)
        transport.close()

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

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._manager is None:  # refused, or already lost
            return
        self._refusals.open -= 1
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
    """A TCP site whose connections are :class:`GuardedHandler` s (one per connection)."""

    __slots__ = ("_limits", "refusals")

    def __init__(self, runner: web.BaseRunner, *args: Any, limits: ConnectionLimits, **kw: Any) -> None:
        super().__init__(runner, *args, **kw)
        self._limits = limits
        self.refusals = _Refusals()

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
        limits, refusals = self._limits, self.refusals

        def factory() -> GuardedHandler:
            # auto_decompress off: a compressed body is refused with 415 (bodies.py), not inflated.
            return GuardedHandler(
                server, loop=loop, access_log=None, auto_decompress=False, limits=limits, refusals=refusals
            )

        self._server = await loop.create_server(
            factory,
            self._host,
            self._port,
            ssl=self._ssl_context,
            backlog=self._backlog,
            reuse_address=self._reuse_address,
            reuse_port=self._reuse_port,
            ssl_handshake_timeout=limits.header_timeout if self._ssl_context is not None else None,
        )
        self._bound_port = self._server.sockets[0].getsockname()[1] if self._server.sockets else self._port
