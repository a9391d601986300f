"""Log set-up (text or JSON lines) and the one access-log line per request.

The access line names method, path, code, latency and the user when authentication put one on the
request (``request[keys.USER]``). Bodies are never
logged: they are users' VMs.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import time
from collections import deque
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote_plus

import orjson
from aiohttp import web

from apiserver.http.keys import TARGET, USER

ACCESS_LOGGER = "apiserver.access"
# Where authentication leaves the caller's identity on the request: a user name, or an object with a
# ``name`` or ``username`` attribute.
FORMATS = ("text", "json")

_access = logging.getLogger(ACCESS_LOGGER)

# What a text log line must not hold as is: C0 and C1 control characters (newlines, ANSI escape
# sequences), DEL, Unicode line and paragraph separators, and the backslash that starts our escapes.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\\\\]")


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\\":
        return "\\\\"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """``text`` safe for one text log line: a decoded ``%0A`` in a path, a user name or a message
    cannot start a forged line, and ANSI escapes cannot recolour a terminal (``\\x0a``, ``\\x1b``,
    ``\\\\``). The same object when there is nothing to escape (the usual case, one C call)."""
    if text.isprintable() and "\\" not in text:
        return text
    return _UNSAFE.sub(_escape_one, text)


# The query parameters this server defines (its OpenAPI documents' and the health and OpenAPI endpoints'),
# and ``timeout``, which every Kubernetes client sends: the access log writes their values as sent. Any
# other parameter is written with its value replaced (a password in ``?pwd=``, however its name is
# spelt or encoded, is not a parameter of ours), and so is any value shaped like a JWT, whatever its name.
KNOWN_QUERY_PARAMETERS = frozenset(
    {
        # GET expand-spec, PUT expand-vm-spec
        "presets",
        "validate",
        "fieldValidation",
        "pretty",
        # GET launch-spec, PUT launch-vm-spec, PUT launch-vmi-spec
        "arch",
        "assumePVCs",
        # the expandedvirtualmachines collection
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "resourceVersion",
        "resourceVersionMatch",
        "watch",
        "allowWatchBookmarks",
        "timeoutSeconds",
        "includeObject",
        "sendInitialEvents",
        # /readyz, /livez, /healthz; /openapi/v3
        "verbose",
        "exclude",
        "hash",
        # client-go's request timeout
        "timeout",
    }
)
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.?")
REDACTED = "REDACTED"


def redact_query(query: str) -> str:
    """``query`` (as sent, percent-encoded) as the access log writes it: each parameter's name and value
    decoded, the value of a parameter the server does not define (or of any JWT-shaped value) replaced
    by ``REDACTED`` (the name kept, so the line still says what was sent)."""
    parts = []
    for part in query.split("&"):
        name, eq, value = part.partition("=")
        name = unquote_plus(name)
        value = unquote_plus(value)
        if eq and (name not in KNOWN_QUERY_PARAMETERS or _JWT.search(value)):
            value = REDACTED
        parts.append(f"{name}{eq}{value}")
    return "&".join(parts)


class JSONFormatter(logging.Formatter):
    """One JSON object per line; the access log's fields become top-level members."""

    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._stamp = ""

    def _time(self, created: float, msecs: float) -> str:
        second = int(created)
        if second != self._second:  # strftime once per second, not per line
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
        return f"{self._stamp}.{int(msecs):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self._time(record.created, record.msecs),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()

    def access_line(self, access: AccessEntry) -> str:
        """What :meth:`format` writes for the access record of ``access``, without the record."""
        created = access[0]
        args, fields = _access_parts(access)
        line = {
            "time": self._time(created, _msecs(created)),
            "level": "info",
            "logger": ACCESS_LOGGER,
            "msg": _ACCESS_FORMAT % args,
        }
        line.update(fields)
        return orjson.dumps(line, default=str).decode()


class TextFormatter(logging.Formatter):
    """The usual text line, with the timestamp text computed once per second rather than per line."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._second = -1
        self._stamp = ""

    def formatMessage(self, record: logging.LogRecord) -> str:
        """The line with the message's control characters escaped (see :func:`escape`); a
        traceback appended after it stays as Python wrote it."""
        message = record.message
        safe = escape(message)
        if safe is message:
            return super().formatMessage(record)
        values = dict(record.__dict__)
        values["message"] = safe
        return str(self._fmt) % values

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        return self._time(record.created, record.msecs)

    def _time(self, created: float, msecs: float) -> str:
        second = int(created)
        if second != self._second:  # what Formatter.formatTime gives, less the milliseconds
            self._second, self._stamp = (
                second,
                time.strftime(self.default_time_format, self.converter(created)),
            )
        return f"{self._stamp},{int(msecs):03d}"

    def access_line(self, access: AccessEntry) -> str:
        """What :meth:`format` writes for the access record of ``access`` (no exception, no stack),
        without the record: one formatting operation, the hottest line of a busy server's log."""
        created, method, path, query, code, seconds, user, _remote = access
        second = int(created)
        if second != self._second:
            self._time(created, 0.0)
        name = _name_of(user) if user is not None else None
        return _TEXT_ACCESS % (
            self._stamp,
            int((created - second) * 1000),  # LogRecord's msecs
            escape(method),
            escape(f"{path}?{redact_query(query)}" if query else path),
            code,
            seconds * 1000,
            f" user={escape(name)}" if name else "",
        )


class BatchingStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes lines through at most every ``delay`` seconds under load, not one write per line.

    Inside a running event loop a line waits at most ``delay`` seconds (a flush is scheduled on the
    loop); outside one, and for warnings and errors, every line is flushed at once. ``logging``'s
    exit hook flushes what is left. Access-log entries are queued as they came and formatted by the
    flush, a batch at a time: formatting in a tight loop costs a fraction of what it costs between
    the steps of a request.
    """

    def __init__(self, stream: Any = None, delay: float = 0.05, max_lines: int = 256) -> None:
        super().__init__(stream)
        self.delay = delay
        self.max_lines = max_lines
        # Appended to by any thread without the lock (deque appends are atomic) and drained, under
        # the lock, from the left: a line queued while a flush runs is written by it or the next one.
        self._pending: deque[str | AccessEntry] = deque()
        self._scheduled_on: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self._pending.append(line + self.terminator)
        if record.levelno >= logging.WARNING or len(self._pending) >= self.max_lines:
            self.flush()
            return
        self._flush_later()

    def queue_access(self, access: AccessEntry) -> None:
        """An access-log entry (the fast path), written by the next flush as :meth:`emit` would have
        written its record."""
        pending = self._pending
        pending.append(access)
        if len(pending) >= self.max_lines:
            self.flush()
            return
        self._flush_later()

    def _text(self, pending: Iterable[str | AccessEntry]) -> str:
        formatter = self.formatter
        line = formatter.access_line if isinstance(formatter, TextFormatter | JSONFormatter) else None
        end = self.terminator
        out: list[str] = []
        for item in pending:
            if isinstance(item, str):
                out.append(item)
            elif line is not None:
                out.append(line(item) + end)
            else:  # the formatter was replaced after the entry was queued
                out.append(self.format(_AccessRecord(item)) + end)  # type: ignore[arg-type]
        return "".join(out)

    def _flush_later(self) -> None:
        scheduled = self._scheduled_on
        if scheduled is not None and scheduled.is_running():
            # A flush is already due on a live loop. Checked before asking for the running loop: on
            # Python 3.11 that asks the kernel for the process id, a system call per line.
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a thread or plain code: no loop to flush later
            self.flush()
            return
        if self._scheduled_on is not loop:
            self._scheduled_on = loop
            loop.call_later(self.delay, self.flush)

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._scheduled_on = None
            queue, take = self._pending, self._pending.popleft
            pending = [take() for _ in range(len(queue))]
            try:
                if pending:
                    self.stream.write(self._text(pending))
                if self.stream and hasattr(self.stream, "flush"):
                    self.stream.flush()
            except (OSError, ValueError):  # stderr closed at exit: nothing left to tell
                pass


def configure(log_format: str = "text", level: str = "info") -> None:
    """Send every log record to stderr in ``log_format``; replaces handlers set up before."""
    handler = BatchingStreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JSONFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # aiohttp's own access log would duplicate ours; watchfiles logs every change it sees at INFO
    # (the sources and the certificate watcher log what the changes did).
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("watchfiles").setLevel(logging.WARNING)


def user_name(request: web.Request) -> str | None:
    return _name_of(request.get(USER))


def _name_of(user: object) -> str | None:
    if user is None or isinstance(user, str):
        return user or None
    for attr in ("name", "username"):
        value = getattr(user, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


_ACCESS_FORMAT = "%s %s %d %.1fms%s"
_TEXT_ACCESS = f"%s,%03d INFO {ACCESS_LOGGER}: {_ACCESS_FORMAT}"

# One request for the access log, as it came: time, method, path, query, code, seconds, the user
# (``request[keys.USER]``), the peer address (JSON lines only, else None). Formatted when written.
AccessEntry = tuple[float, str, str, str, int, float, object, str | None]


def _msecs(created: float) -> float:
    """LogRecord's ``msecs`` for a ``created`` time."""
    return int((created - int(created)) * 1000) + 0.0


def _access_args(access: AccessEntry) -> tuple[Any, ...]:
    _created, method, path, query, code, seconds, user, _remote = access
    name = _name_of(user)
    return (
        method,
        f"{path}?{redact_query(query)}" if query else path,
        code,
        seconds * 1000,
        f" user={name}" if name else "",
    )


def _access_parts(access: AccessEntry) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The message arguments and the JSON fields of an access line."""
    _created, method, path, query, code, seconds, user, remote = access
    fields: dict[str, Any] = {
        "method": method,
        "path": path,
        "code": code,
        "latency_ms": round(seconds * 1000, 3),
    }
    if query:
        fields["query"] = redact_query(query)
    name = _name_of(user)
    if name:
        fields["user"] = name
    fields["remote"] = remote
    return _access_args(access), fields


class _AccessRecord:
    """What the formatters here read of a LogRecord, for the access line when only our handler
    listens: a LogRecord also records thread, process, caller and task names nobody prints."""

    def __init__(self, access: AccessEntry) -> None:
        # Instance attributes all: the text format reads them from the record's __dict__.
        self.name = ACCESS_LOGGER
        self.levelname = "INFO"
        self.levelno = logging.INFO
        self.msg = _ACCESS_FORMAT
        self.exc_info = self.exc_text = self.stack_info = None
        self.args, self.fields = _access_parts(access)
        self.created = access[0]
        self.msecs = _msecs(self.created)

    def getMessage(self) -> str:
        return self.msg % self.args


def _sole_handler() -> BatchingStreamHandler | None:
    """The handler :func:`configure` installed, when it is the only place the access line goes."""
    logger = _access
    if logger.handlers or logger.filters or logger.disabled or not logger.propagate:
        return None
    root = logging.getLogger()
    parent = logger.parent
    while parent is not None and parent is not root:
        if parent.handlers or not parent.propagate:
            return None
        parent = parent.parent
    handlers = root.handlers
    if len(handlers) != 1:
        return None
    handler = handlers[0]
    if type(handler) is not BatchingStreamHandler or handler.level > logging.INFO:
        return None
    if not isinstance(handler.formatter, TextFormatter | JSONFormatter):
        return None
    return handler


_UNSET: Any = object()


def _as_received(request: web.BaseRequest) -> tuple[str, str]:
    """The path and query the access log writes: as the client sent them (the target's escapes kept,
    as kube-apiserver's audit log keeps its ``requestURI``), from the one parse every layer read
    (:mod:`apiserver.http.target`); a target that did not parse, as sent, cut at its ``?``."""
    target = request.get(TARGET)
    if target is not None:
        return target.raw, target.query
    raw, _, query = request.raw_path.partition("?")
    return raw, query


def log_request(
    request: web.Request, code: int, seconds: float, user: object = _UNSET, *, debug: bool = False
) -> None:
    """The access line of ``request``; ``user``: what ``request[keys.USER]`` holds, when the caller
    knows (None when nothing authenticates requests), else read from the request. ``debug``: a
    routine answer (probes, discovery), logged at debug level rather than info."""
    if debug:
        if _access.isEnabledFor(logging.DEBUG):
            _log_record(request, code, seconds, request.get(USER) if user is _UNSET else user, logging.DEBUG)
        return
    if not _access.isEnabledFor(logging.INFO):
        return
    if user is _UNSET:
        user = request.get(USER)
    handler = _sole_handler()
    if handler is not None and not handler.filters:
        # Only the values now; the line is made when the batch is written.
        remote = request.remote if type(handler.formatter) is JSONFormatter else None
        handler.queue_access(
            (
                time.time(),
                request.method,
                *_as_received(request),
                code,
                seconds,
                user,
                remote,
            )
        )
        return
    access: AccessEntry = (
        time.time(),
        request.method,
        *_as_received(request),
        code,
        seconds,
        user,
        request.remote,
    )
    if handler is not None:
        handler.handle(_AccessRecord(access))  # type: ignore[arg-type]
        return
    _handle(access, logging.INFO)


def _log_record(request: web.Request, code: int, seconds: float, user: object, level: int) -> None:
    access: AccessEntry = (
        time.time(),
        request.method,
        *_as_received(request),
        code,
        seconds,
        user,
        request.remote,
    )
    _handle(access, level)


def _handle(access: AccessEntry, level: int) -> None:
    # makeRecord + handle: Logger.info would also walk the stack for the caller's file and line.
    args, fields = _access_parts(access)
    record = _access.makeRecord(
        ACCESS_LOGGER, level, __file__, 0, _ACCESS_FORMAT, args, None, extra={"fields": fields}
    )
    record.created, record.msecs = access[0], _msecs(access[0])
    _access.handle(record)
