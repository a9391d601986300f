"""Log set-up (text or JSON lines) and the one access-log line per request.

The access line names method, path, code, latency and the user when authentication put one on the
request (``request[USER_KEY]``). Bodies are never
logged: they are users' VMs.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import orjson
from aiohttp import web

ACCESS_LOGGER = "apiserver.access"
# Where authentication leaves the caller's identity on the request: a user name, or an object with a
# ``name`` or ``username`` attribute.
USER_KEY = web.RequestKey("user", object)
FORMATS = ("text", "json")

_access = logging.getLogger(ACCESS_LOGGER)


class JSONFormatter(logging.Formatter):
    """One JSON object per line; the access log's fields become top-level members."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
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


def configure(log_format: str = "text", level: str = "info") -> None:
    """Send every log record to stderr in ``log_format``; replaces handlers set up before."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JSONFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # aiohttp's own access log would duplicate ours.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def user_name(request: web.Request) -> str | None:
    user = request.get(USER_KEY)
    if user is None or isinstance(user, str):
        return user or None
    for attr in ("name", "username"):
        value = getattr(user, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


def log_request(request: web.Request, code: int, seconds: float) -> None:
    user = user_name(request)
    fields: dict[str, Any] = {
        "method": request.method,
        "path": request.path,
        "code": code,
        "latency_ms": round(seconds * 1000, 3),
    }
    if request.query_string:
        fields["query"] = request.query_string
    if user:
        fields["user"] = user
    fields["remote"] = request.remote
    target = request.path + (f"?{request.query_string}" if request.query_string else "")
    _access.info(
        "%s %s %d %.1fms%s",
        request.method,
        target,
        code,
        seconds * 1000,
        f" user={user}" if user else "",
        extra={"fields": fields},
    )
