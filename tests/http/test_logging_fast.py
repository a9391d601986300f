"""The access line written without a LogRecord (only the configured handler listening) reads exactly like
the one a LogRecord gives, in both formats."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from aiohttp.test_utils import make_mocked_request

from apiserver.http import logging as access
from apiserver.http.keys import USER as USER_KEY
from apiserver.http.logging import (
    ACCESS_LOGGER,
    BatchingStreamHandler,
    JSONFormatter,
    TextFormatter,
    log_request,
)


@contextmanager
def root_handler() -> Iterator[tuple[io.StringIO, BatchingStreamHandler]]:
    """Our handler alone on the root logger (pytest adds its capture handlers around each test)."""
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    stream = io.StringIO()
    handler = BatchingStreamHandler(stream)
    for old in saved:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream, handler
    finally:
        root.removeHandler(handler)
        for old in saved:
            root.addHandler(old)
        root.setLevel(level)


def _line(stream: io.StringIO, handler: BatchingStreamHandler, fast: bool) -> str:
    request = make_mocked_request("PUT", "/apis/g/v1/namespaces/d/expand-vm-spec?presets=true")
    request[USER_KEY] = "jane"
    assert (access._sole_handler() is handler) is fast
    log_request(request, 422, 0.0123)
    handler.flush()
    lines = stream.getvalue().splitlines()
    stream.seek(0)
    stream.truncate()
    assert len(lines) == 1
    return lines[0]


@pytest.mark.parametrize("formatter", [TextFormatter(), JSONFormatter()], ids=["text", "json"])
def test_fast_line_equals_the_logrecord_line(formatter: logging.Formatter) -> None:
    with root_handler() as (stream, handler):
        handler.setFormatter(formatter)
        fast, slow = _both(stream, handler)
    _compare(formatter, fast, slow)


def _both(stream: io.StringIO, handler: BatchingStreamHandler) -> tuple[str, str]:
    fast = _line(stream, handler, fast=True)
    extra = logging.NullHandler()  # another listener: the LogRecord path
    logging.getLogger(ACCESS_LOGGER).addHandler(extra)
    try:
        slow = _line(stream, handler, fast=False)
    finally:
        logging.getLogger(ACCESS_LOGGER).removeHandler(extra)
    return fast, slow


def _compare(formatter: logging.Formatter, fast: str, slow: str) -> None:
    if isinstance(formatter, JSONFormatter):
        fast_entry, slow_entry = json.loads(fast), json.loads(slow)
        assert fast_entry.pop("time")[:4] == slow_entry.pop("time")[:4]
        assert fast_entry == slow_entry
        assert (
            fast_entry["msg"]
            == "PUT /apis/g/v1/namespaces/d/expand-vm-spec?presets=true 422 12.3ms user=jane"
        )
    else:
        stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")
        assert stamp.match(fast) and stamp.match(slow)
        assert stamp.sub("", fast) == stamp.sub("", slow)
        assert stamp.sub("", fast) == (
            "INFO apiserver.access: PUT /apis/g/v1/namespaces/d/expand-vm-spec?presets=true 422 12.3ms user=jane"
        )


@pytest.mark.parametrize("formatter", [TextFormatter(), JSONFormatter()], ids=["text", "json"])
@pytest.mark.parametrize("now", [1700000000.123, 1700000000.9996, 1700000001.0])
def test_fast_line_has_the_logrecord_timestamp(
    formatter: logging.Formatter, now: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole lines, timestamps included, at a frozen clock (and across a second boundary)."""
    monkeypatch.setattr("time.time", lambda: now)
    with root_handler() as (stream, handler):
        handler.setFormatter(formatter)
        fast, slow = _both(stream, handler)
    assert fast == slow
    if isinstance(formatter, TextFormatter):
        expected = logging.Formatter("%(asctime)s").formatTime(logging.makeLogRecord({"created": now}))
        assert fast.startswith(expected.rpartition(",")[0])


async def test_queued_entries_keep_their_place_and_follow_a_new_formatter() -> None:
    """Entries are formatted when written: in order with other records, by the formatter set then
    (inside a running loop lines wait for the flush)."""
    with root_handler() as (stream, handler):
        handler.setFormatter(TextFormatter())
        request = make_mocked_request("GET", "/apis/g/v1/namespaces/d/virtualmachines/x/expand-spec")
        log_request(request, 200, 0.0004)
        logging.getLogger("apiserver.test").info("between")
        log_request(request, 404, 0.002)
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        handler.flush()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "INFO GET /apis/g/v1/namespaces/d/virtualmachines/x/expand-spec 200 0.4ms"
    assert lines[1].endswith(" INFO apiserver.test: between")  # formatted when it was logged
    assert lines[2] == "INFO GET /apis/g/v1/namespaces/d/virtualmachines/x/expand-spec 404 2.0ms"
    assert len(lines) == 3


JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"


@pytest.mark.parametrize("formatter", [TextFormatter(), JSONFormatter()], ids=["text", "json"])
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "logrecord"])
def test_credentials_in_the_query_are_not_written(formatter: logging.Formatter, fast: bool) -> None:
    """A token passed as ?access_token= (or any parameter named for a credential, or any JWT-shaped
    value) is written as REDACTED; the other parameters as sent."""
    query = f"presets=true&access_token={JWT}&x={JWT}&password=hunter2&validate=true"
    with root_handler() as (stream, handler):
        handler.setFormatter(formatter)
        extra = None if fast else logging.NullHandler()
        if extra is not None:
            logging.getLogger(ACCESS_LOGGER).addHandler(extra)
        try:
            request = make_mocked_request(
                "GET", f"/apis/g/v1/namespaces/d/virtualmachines/v/expand-spec?{query}"
            )
            log_request(request, 200, 0.001)
            handler.flush()
        finally:
            if extra is not None:
                logging.getLogger(ACCESS_LOGGER).removeHandler(extra)
    line = stream.getvalue()
    assert "hunter2" not in line and "eyJ" not in line, line
    assert "presets=true&access_token=REDACTED&x=REDACTED&password=REDACTED&validate=true" in line
    assert access.redact_query("presets=true&tokenless") == "presets=true&tokenless"


@pytest.mark.parametrize(
    ("query", "written"),
    [
        ("pw%64=SECRET", "pwd=REDACTED"),  # a name spelt encoded is read decoded
        ("limit=5&x=SECRET&limit=6", "limit=5&x=REDACTED&limit=6"),
        ("fieldSelector%00=SECRET", r"fieldSelector\x00=REDACTED"),
        ("fieldSelector=metadata.name%3Dvm-1", "fieldSelector=metadata.name=vm-1"),
        ("x=a%26limit%3DSECRET", "x=REDACTED"),  # an encoded & does not split a value
        ("labelSelector=a+in+(b)", "labelSelector=a in (b)"),
        ("continue=eyJ2IjoiMSJ9", "continue=eyJ2IjoiMSJ9"),  # base64 JSON, not a JWT
    ],
)
def test_only_the_parameters_the_server_defines_keep_their_values(query: str, written: str) -> None:
    """The access log is an allow-list: a parameter the server does not define has its value replaced,
    whatever its name and however it is encoded."""
    with root_handler() as (stream, handler):
        handler.setFormatter(TextFormatter())
        log_request(make_mocked_request("GET", f"/apis/g/v1/namespaces/d/things?{query}"), 200, 0.001)
        handler.flush()
    line = stream.getvalue()
    assert "SECRET" not in line, line
    assert f"things?{written} 200" in line, line


def test_every_query_parameter_of_the_openapi_documents_is_known() -> None:
    """The allow-list follows the API: every parameter an OpenAPI document of the server declares is
    logged as sent."""
    from apiserver.http.endpoints.openapi import openapi_v2, openapi_v3
    from apiserver.http.settings import Settings
    from apiserver.sources.rendered import items as evm

    settings = Settings()
    docs = [openapi_v2(settings, True), openapi_v3(settings, evm.VERSION, evm.GROUP, True)]
    docs += [openapi_v3(settings, version, collection=True) for version in settings.api_versions]
    declared: set[str] = set()
    for doc in docs:
        for item in doc["paths"].values():
            for op in item.values():
                if isinstance(op, dict):
                    declared.update(p["name"] for p in op.get("parameters", []) if p.get("in") == "query")
    assert declared and declared <= access.KNOWN_QUERY_PARAMETERS, declared - access.KNOWN_QUERY_PARAMETERS
