"""Property: against our own OpenAPI v3 document, every answer is a documented status, every error
body is a Kubernetes Status, and nothing is a 5xx.

schemathesis generates the requests (valid and invalid paths, query parameters, bodies) for every
operation of ``/openapi/v3/apis/<group>/<version>``; the server is the real one (TLS, the folder
source with examples/), running in a thread of this process. Its answers are checked with
schemathesis' checks (status code, content type, response schema) and ours (a Status, sized sanely).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
import schemathesis
import yaml
from hypothesis import event, example, given
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from apiserver.documents.reader import read_documents
from apiserver.http.server import CERT_NAME, Server
from apiserver.http.settings import Settings
from apiserver.sources.folder import FolderSource
from tests.support.fuzzing import count, fuzz, mutated, text_mutated, unlimited_int_text
from tests.support.http_helpers import EXAMPLES, GROUP

TARGET = "HTTP API: schemathesis"
TIMEOUT = 30.0
STORED_VMS = ("fedora", "fedora-cluster", "fedora-pinned")


@dataclass
class ThreadedServer:
    """The real server on 127.0.0.1 and a free port, its event loop in a thread of its own."""

    url: str
    ca_file: Path
    loop: asyncio.AbstractEventLoop
    server: Server
    thread: threading.Thread

    errors: list[logging.LogRecord] = field(default_factory=list)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(TIMEOUT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()


class _Collect(logging.Handler):
    """Keeps every ERROR the server logs: an answer may be a clean 4xx and still hide one."""

    def __init__(self, into: list[logging.LogRecord]) -> None:
        super().__init__(logging.ERROR)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record)


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
    handler = _Collect(running.errors)
    logging.getLogger().addHandler(handler)
    try:
        yield running
    finally:
        logging.getLogger().removeHandler(handler)
        running.stop()


def no_errors_logged(server: ThreadedServer) -> None:
    logged = [record.getMessage() for record in server.errors]
    server.errors.clear()
    assert not logged, logged


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
    case = data.draw(target.cases, label="case")
    count(TARGET)
    response = case.call(verify=str(target.server.ca_file), timeout=TIMEOUT)
    event(f"{case.method} {response.status_code}")
    case.validate_response(
        response, checks=[status_code_conformance, content_type_conformance, response_schema_conformance]
    )
    check_status_body(response)
    no_errors_logged(target.server)


# --- PUT bodies: the example VMs as JSON or YAML, mutated (what schemathesis does not write) ---------

BODY_TARGET = "HTTP API: PUT mutated bodies"
PUT_CODES = {200, 400, 413, 415, 422}  # documented for PUT, with 406 for Accept
_EXAMPLE_VMS = [
    doc
    for path in sorted(EXAMPLES.glob("vm-*.yaml"))
    for doc in yaml.safe_load_all(path.read_text())
    if isinstance(doc, dict) and doc.get("kind") == "VirtualMachine"
]


@st.composite
def bodies(draw: st.DrawFn) -> tuple[bytes, str | None, str, str | None]:
    """A body (an example VM, its structure then its text mutated), its Content-Type, a query and
    an Accept header."""
    vm: Any = draw(st.sampled_from(_EXAMPLE_VMS))
    if draw(st.booleans()):
        vm = draw(mutated(vm, deep=False))
    fmt = draw(st.sampled_from(["json", "yaml"]))
    with unlimited_int_text():
        text = json.dumps(vm, indent=1) if fmt == "json" else yaml.safe_dump(vm, sort_keys=False)
    data = draw(text_mutated(text)) if draw(st.integers(0, 3)) else text.encode()
    content_type = draw(
        st.sampled_from([None, "application/json", "application/yaml", "text/yaml", "text/plain"])
    )
    query = draw(
        st.sampled_from(
            ["", "?fieldValidation=Ignore", "?fieldValidation=Warn", "?presets=true", "?validate=1"]
        )
    )
    accept = draw(st.sampled_from([None, "application/json", "application/yaml", "*/*", "text/html"]))
    return data, content_type, query, accept


@fuzz(BODY_TARGET, ci_examples=100)
@given(body=bodies())
@example(body=(b"kind: VirtualMachine\nspec: !!set {a, b}\n", "application/yaml", "", None))
def test_put_answers_any_body_with_a_status(
    server: ThreadedServer, body: tuple[bytes, str | None, str, str | None]
) -> None:
    count(BODY_TARGET)
    data, content_type, query, accept = body

    def put(accept: str | None) -> requests.Response:
        headers = {"Content-Type": content_type} if content_type else {}
        headers |= {"Accept": accept} if accept else {}
        url = f"{server.url}/apis/{GROUP}/v1/namespaces/default/expand-vm-spec{query}"
        return requests.put(url, data=data, headers=headers, verify=str(server.ca_file), timeout=TIMEOUT)

    response = put(accept)
    event(f"PUT {response.status_code}")
    assert response.status_code in PUT_CODES | {406}, response.text[:2000]
    no_errors_logged(server)
    # As kube-apiserver's update handler: the answer's media type is negotiated before the body's.
    if accept == "text/html":
        assert response.status_code == 406
    elif content_type == "text/plain":
        assert response.status_code == 415
    if response.status_code == 200 and accept == "application/yaml":
        assert response.headers["Content-Type"].startswith("application/yaml"), response.headers
        # The YAML reads back (as kubectl reads it) to exactly what the JSON answer says.
        (document,) = [doc for doc in read_documents(response.content) if doc.value is not None]
        assert document.value == put("application/json").json()
        return
    assert response.headers["Content-Type"].startswith("application/json"), response.headers
    if response.status_code == 200:
        expanded = response.json()  # no "kind" when the body had none, as KubeVirt encodes it
        assert expanded.get("kind", "VirtualMachine") == "VirtualMachine" and "spec" in expanded
    check_status_body(response)


# --- any path, method and query: routing, health, discovery, OpenAPI, metrics -----------------------

PATH_TARGET = "HTTP API: any path and method"
_VERSIONS = ("v1", "v1alpha3")
_KNOWN_PATHS = [
    "/",
    "/apis",
    f"/apis/{GROUP}",
    *(f"/apis/{GROUP}/{v}" for v in _VERSIONS),
    *(f"/apis/{GROUP}/{v}/version" for v in _VERSIONS),
    "/openapi/v2",
    "/openapi/v3",
    *(f"/openapi/v3/apis/{GROUP}/{v}" for v in _VERSIONS),
    "/livez",
    "/readyz",
    "/healthz",
    "/readyz/folder",
    "/metrics",
    "/version",
    *(f"/apis/{GROUP}/{v}/namespaces/default/virtualmachines/fedora/expand-spec" for v in _VERSIONS),
    *(f"/apis/{GROUP}/{v}/namespaces/default/expand-vm-spec" for v in _VERSIONS),
]
_ODD_SEGMENTS = [
    "",
    ".",
    "..",
    "%2E%2E",
    "%2F",
    "%00",
    "%0A",
    "%0D%0AX-Injected:%201",
    "%1B%5B31m",
    "%ZZ",
    "%",
    "%C3%28",
    "%E2%80%AE",
    "a" * 300,
    "UPPER",
    "fedora",
    "default",
    "kube-system",
    "expand-spec",
    "virtualmachines",
    "namespaces",
    GROUP,
    "v1",
    "v2",
]
_QUERIES = [
    "",
    "?",
    "?presets",
    "?presets=",
    "?presets=TRUE",
    "?presets=yes",
    "?validate=1&validate=0",
    "?fieldValidation=strict",
    "?fieldValidation=Warn&fieldValidation=Strict",
    "?verbose",
    "?exclude=folder",
    "?pretty=true",
    "?watch=true",
    "?timeout=1s",
    "?%ZZ=1",
    "?a=%00",
    "?" + "a=1&" * 500,
]


@st.composite
def raw_paths(draw: st.DrawFn) -> str:
    """A known path, maybe with a segment replaced, dropped or added, and a query."""
    segments = draw(st.sampled_from(_KNOWN_PATHS)).split("/")
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        at = draw(st.integers(1, len(segments)))
        segment = draw(
            st.one_of(st.sampled_from(_ODD_SEGMENTS), st.text(max_size=10).map(lambda t: quote(t, safe="")))
        )
        operation = draw(st.sampled_from(["replace", "insert", "drop"]))
        if operation == "insert" or at == len(segments):
            segments.insert(at, segment)
        elif operation == "replace":
            segments[at] = segment
        elif len(segments) > 2:
            del segments[at]
    return "/".join(segments) + draw(st.sampled_from(_QUERIES))


def raw_request(
    server: ThreadedServer, method: str, path: str, headers: dict[str, str], body: bytes | None
) -> tuple[int, dict[str, str], bytes]:
    """One request sent as written (no client normalizing the path), over TLS."""
    context = ssl.create_default_context(cafile=str(server.ca_file))
    port = int(server.url.rsplit(":", 1)[1])
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=TIMEOUT)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@fuzz(PATH_TARGET, ci_examples=100)
@given(
    method=st.sampled_from(["GET", "GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE"]),
    path=raw_paths(),
    accept=st.sampled_from([None, "application/json", "application/yaml", "text/plain", "*/*", "a/b;q=x"]),
    body=st.sampled_from([None, b"", b"{}", b"kind: VirtualMachine\nspec: {}\n", b"\x00\xff"]),
)
def test_any_path_and_method_get_a_status(
    server: ThreadedServer, method: str, path: str, accept: str | None, body: bytes | None
) -> None:
    count(PATH_TARGET)
    headers = {"Accept": accept} if accept else {}
    code, headers_in, content = raw_request(server, method, path, headers, body)
    event(f"{method} {code}")
    assert code < 500, (code, content[:2000])
    no_errors_logged(server)
    if code >= 400 and method != "HEAD":
        assert headers_in["content-type"].startswith("application/json"), headers_in
        status_body = json.loads(content)
        assert status_body["kind"] == "Status" and status_body["code"] == code, status_body
        assert "Traceback" not in status_body["message"]
    assert len(content) <= 4 * 1024 * 1024
