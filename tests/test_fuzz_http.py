"""Property: against our own OpenAPI v3 document, every answer is a documented status, every error
body is a Kubernetes Status, and nothing is a 5xx.

schemathesis generates the requests (valid and invalid paths, query parameters, bodies) for every
operation of ``/openapi/v3/apis/<group>/<version>``; the server is the real one (TLS, the folder
source with examples/), running in a thread of this process. Its answers are checked with
schemathesis' checks (status code, content type, response schema) and ours (a Status, sized sanely).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import event, given
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from apiserver.http.server import CERT_NAME, Server
from apiserver.http.settings import Settings
from apiserver.sources.folder import FolderSource
from tests.fuzzing import count, fuzz
from tests.http_helpers import EXAMPLES, GROUP

TARGET = "HTTP API: schemathesis"
TIMEOUT = 30.0
STORED_VMS = ("fedora", "fedora-cluster", "fedora-pinned")
_CONTROL = "".join(map(chr, [*range(32), 127]))


@dataclass
class ThreadedServer:
    """The real server on 127.0.0.1 and a free port, its event loop in a thread of its own."""

    url: str
    ca_file: Path
    loop: asyncio.AbstractEventLoop
    server: Server
    thread: threading.Thread

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(TIMEOUT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()


def start_server(tmp: Path) -> ThreadedServer:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fuzz-server", daemon=True)
    thread.start()
    settings_ = Settings(secure_port=0, cert_dir=str(tmp / "certs"), request_timeout=TIMEOUT)
    server = Server(settings_, FolderSource(EXAMPLES, watch=False), authentication=False)
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(TIMEOUT)
    return ThreadedServer(f"https://127.0.0.1:{server.port}", tmp / "certs" / CERT_NAME, loop, server, thread)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    running = start_server(tmp_path_factory.mktemp("fuzz-http"))
    try:
        yield running
    finally:
        running.stop()


@dataclass
class Target:
    server: ThreadedServer
    cases: st.SearchStrategy[schemathesis.Case]


@pytest.fixture(scope="module")
def target(server: ThreadedServer) -> Target:
    """schemathesis' cases, valid and invalid, for every operation of the document the server serves."""
    document = requests.get(
        f"{server.url}/openapi/v3/apis/{GROUP}/v1", verify=str(server.ca_file), timeout=TIMEOUT
    ).json()
    schema = schemathesis.openapi.from_dict(document)
    schema.config.update(base_url=server.url)
    # aiohttp's request parser answers control characters in a header value itself (text/plain 400,
    # logged as a traceback: issue 12 item 7, fixed on the "hardening" branch); the fuzzing here is
    # about what the application answers.
    schema.config.generation.update(exclude_header_characters=_CONTROL)
    modes = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
    # Stored VMs that exist too, so that GET gets past the 404 (their query and headers still fuzzed).
    stored = [
        schema.as_strategy(mode, path_parameters={"namespace": "default", "name": name})
        for name in STORED_VMS
        for mode in modes
    ]
    return Target(server, st.one_of(*(schema.as_strategy(mode) for mode in modes), *stored))


def check_status_body(response: schemathesis.Response) -> None:
    """Every error is a JSON Status whose code is the HTTP status, never a 5xx."""
    assert response.status_code < 500, response.text[:2000]
    if response.status_code < 400:
        return
    body = response.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1", body
    assert body["status"] == "Failure" and body["code"] == response.status_code, body
    assert isinstance(body["message"], str) and body["message"], body
    assert "Traceback" not in body["message"]
    for cause in body.get("details", {}).get("causes", []):
        assert isinstance(cause.get("message", ""), str) and isinstance(cause.get("field", ""), str)
    # Bounded: not much bigger than what was sent.
    sent = len(response.request.body or b"") + len(response.request.url)
    assert len(response.content) <= 4 * sent + 65_536, (len(response.content), sent)


@fuzz(TARGET, ci_examples=120)
@given(data=st.data())
def test_the_api_answers_as_documented(target: Target, data: st.DataObject) -> None:
    count(TARGET)
    case = data.draw(target.cases, label="case")
    response = case.call(verify=str(target.server.ca_file), timeout=TIMEOUT)
    event(f"{case.method} {response.status_code}")
    case.validate_response(
        response, checks=[status_code_conformance, content_type_conformance, response_schema_conformance]
    )
    check_status_body(response)
