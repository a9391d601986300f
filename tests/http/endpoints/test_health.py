"""Health endpoints, metrics and the access log, over HTTPS."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.typedefs import Handler

from apiserver.auth.authorization import request_attributes
from apiserver.http.filters.scoping import grant_scope
from apiserver.http.keys import USER as USER_KEY
from apiserver.http.logging import ACCESS_LOGGER, JSONFormatter
from apiserver.sources.base import CacheStats, Check
from tests.support.http_helpers import MemorySource, put_path, running_server, vm_path


async def test_health_endpoints_plain_and_verbose(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        for endpoint in ("livez", "readyz", "healthz"):
            plain = await srv.get(f"/{endpoint}")
            assert (plain.status, plain.body) == (200, b"ok")
            assert plain.headers["content-type"].startswith("text/plain")
        verbose = await srv.get("/readyz?verbose")
        live = await srv.get("/livez?verbose")
        one = await srv.get("/readyz/memory")
    assert verbose.status == 200
    assert verbose.body.decode().splitlines() == [
        "[+]ping ok",
        "[+]shutdown ok",
        "[+]memory ok",
        "readyz check passed",
    ]
    assert live.body.decode().splitlines() == ["[+]ping ok", "livez check passed"]
    assert (one.status, one.body) == (200, b"ok")


async def test_readyz_fails_with_the_source_reason(tmp_path: Path) -> None:
    source = MemorySource(check_list=[Check("manifests", False, "vm.yaml: document 2, line 3: bad indent")])
    async with running_server(source, tmp_path) as srv:
        ready = await srv.get("/readyz")
        verbose = await srv.get("/readyz?verbose")
        live = await srv.get("/livez")
        excluded = await srv.get("/readyz?exclude=manifests")
        missing = await srv.get("/readyz/nosuch")
    assert ready.status == 500
    assert "[-]manifests failed: vm.yaml: document 2, line 3: bad indent" in ready.body.decode()
    assert verbose.body.decode().splitlines()[-1] == "readyz check failed"
    assert live.status == 200  # the process is alive; it is only not ready
    assert excluded.status == 200
    assert missing.status == 404 and missing.json()["kind"] == "Status"


async def test_a_passing_check_with_a_warning_keeps_it_beside_ok(tmp_path: Path) -> None:
    warning = "warning, serving what was read before: vm.yaml: document 1, line 2: bad indent"
    source = MemorySource(check_list=[Check("manifests", True, warning)])
    async with running_server(source, tmp_path) as srv:
        plain = await srv.get("/readyz")
        verbose = await srv.get("/readyz?verbose")
        one = await srv.get("/readyz/manifests?verbose")
    assert (plain.status, plain.body) == (200, b"ok")
    assert verbose.status == 200
    assert verbose.body.decode().splitlines()[-2:] == [f"[+]manifests ok - {warning}", "readyz check passed"]
    assert one.body.decode().splitlines() == [f"[+]manifests ok - {warning}", "readyz check passed"]


async def test_readyz_fails_once_shutdown_begins(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        srv.server.state.shutting_down = True
        reply = await srv.get("/readyz?verbose")
        live = await srv.get("/livez")
    assert reply.status == 500
    assert "[-]shutdown failed: the server is shutting down" in reply.body.decode()
    assert live.status == 200


class CachingSource(MemorySource):
    def cache_stats(self) -> list[CacheStats]:
        return [CacheStats("instancetypes", 4, hits=10, misses=2)]


async def test_metrics_by_route_template_code_and_cache(tmp_path: Path) -> None:
    async with running_server(CachingSource(), tmp_path) as srv:
        await srv.get(vm_path(name="a"))
        await srv.get(vm_path(name="b"))
        await srv.put(put_path(), data=b"[]")
        await srv.get("/no/such/path")
        reply = await srv.get("/metrics")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = reply.body.decode()
    template = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}/expand-spec"
    assert f'kubevirt_expand_http_requests_total{{code="404",endpoint="{template}",verb="GET"}} 2.0' in text
    put_template = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/expand-vm-spec"
    assert (
        f'kubevirt_expand_http_requests_total{{code="400",endpoint="{put_template}",verb="PUT"}} 1.0' in text
    )
    assert 'kubevirt_expand_http_requests_total{code="404",endpoint="other",verb="GET"} 1.0' in text
    assert "/namespaces/default/" not in text  # raw paths never become labels
    assert (
        f'kubevirt_expand_http_request_duration_seconds_count{{endpoint="{template}",verb="GET"}} 2.0' in text
    )
    assert 'kubevirt_expand_render_errors_total{reason="NotFound"} 2.0' in text
    assert 'kubevirt_expand_source_cache_objects{cache="instancetypes"} 4.0' in text
    assert 'kubevirt_expand_source_cache_hits_total{cache="instancetypes"} 10.0' in text
    assert 'kubevirt_expand_source_cache_misses_total{cache="instancetypes"} 2.0' in text


async def fake_authn(request: web.Request, handler: Handler) -> web.StreamResponse:
    """An authentication filter that knows one user and lets them read anything: the scope of the path,
    granted as the authorization filter grants it (a handler reads nothing without one)."""
    request[USER_KEY] = "jane@example.com"
    grant_scope(request, request_attributes(request.method, request.path), None)
    return await handler(request)


async def test_access_log_line_per_request_without_body(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "s3cr3t-cloud-init-password"
    vm = {"metadata": {"name": "x", "namespace": "other"}, "spec": {"password": secret}}
    caplog.set_level(logging.DEBUG, logger=ACCESS_LOGGER)  # a probe's answer is logged at debug
    async with running_server(MemorySource(), tmp_path, filters=[fake_authn]) as srv:
        await srv.put(put_path() + "?presets=true", json_body=vm)
        await srv.get("/livez")
    records = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert len(records) == 2
    put_line = records[0].getMessage()
    assert put_line.startswith(f"PUT {put_path()}?presets=true 422 ")
    assert put_line.endswith("ms user=jane@example.com")
    assert secret not in put_line
    fields = records[0].fields  # type: ignore[attr-defined]
    assert fields["method"] == "PUT" and fields["code"] == 422 and fields["user"] == "jane@example.com"
    assert fields["latency_ms"] >= 0
    line = JSONFormatter().format(records[0])
    entry = json.loads(line)
    assert (entry["method"], entry["path"], entry["code"], entry["user"]) == (
        "PUT",
        put_path(),
        422,
        "jane@example.com",
    )
    assert secret not in line
    assert records[1].getMessage().startswith("GET /livez 200 ")
    assert (records[0].levelname, records[1].levelname) == ("INFO", "DEBUG")
