"""Media types, query parameters, ETag/304, warnings and error-code mapping of the expand endpoints.

The renderer is replaced by a recording fake here so that these tests pin the HTTP layer alone;
tests/http/endpoints/test_expand.py runs the real engine end to end.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from apiserver.render import ExpandError, ExpandResult
from apiserver.render.kubernetes.errors import Cause
from apiserver.render.objects import ObjectLookup
from tests.support.http_helpers import MemorySource, put_path, running_server, vm_path

VM: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm1", "namespace": "default", "creationTimestamp": "2024-01-02T03:04:05Z"},
    "spec": {"template": {"spec": {"domain": {"devices": {}}}}},
}


class FakeEngine:
    """Stands in for apiserver.render.expand: records its calls, returns or raises what it is told."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.error: ExpandError | None = None

    def __call__(self, vm: Mapping[str, Any], lookup: ObjectLookup, **kw: Any) -> ExpandResult:
        self.calls.append({"vm": vm, **kw})
        if self.error is not None:
            raise self.error
        return ExpandResult({**vm, "expanded": True}, list(self.warnings))


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEngine]:
    fake = FakeEngine()
    monkeypatch.setattr("apiserver.sources.gather.expand", fake)
    yield fake


async def test_get_returns_json_by_default_and_for_virtctl_accept(tmp_path: Path, engine: FakeEngine) -> None:
    async with running_server(MemorySource([VM]), tmp_path) as srv:
        for accept in (
            None,
            "application/json, */*",
            "*/*",
            "application/*",
            "application/json;charset=utf-8",
        ):
            reply = await srv.get(vm_path(name="vm1"), headers={"Accept": accept} if accept else None)
            assert reply.status == 200, (accept, reply.body)
            assert reply.headers["content-type"] == "application/json"
            assert reply.json() == {**VM, "expanded": True}
    assert engine.calls[0]["exact_names"] is True


async def test_yaml_response_when_accept_prefers_it(tmp_path: Path, engine: FakeEngine) -> None:
    async with running_server(MemorySource([VM]), tmp_path) as srv:
        reply = await srv.get(vm_path(name="vm1"), headers={"Accept": "application/yaml"})
        weighted = await srv.get(
            vm_path(name="vm1"), headers={"Accept": "application/json;q=0.5, application/yaml"}
        )
    for r in (reply, weighted):
        assert r.status == 200
        assert r.headers["content-type"] == "application/yaml"
        doc = yaml.safe_load(r.body)
        assert doc["metadata"]["name"] == "vm1"
        assert doc["expanded"] is True
    # Member order follows the object, not the alphabet.
    assert reply.body.decode().splitlines()[0] == "apiVersion: kubevirt.io/v1"


async def test_put_without_content_type_is_json(tmp_path: Path, engine: FakeEngine) -> None:
    body = {**VM, "metadata": {"name": "vm1"}}
    async with running_server(MemorySource(), tmp_path) as srv:
        reply = await srv.put(put_path("ns1"), data=orjson.dumps(body))
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"] == "application/json"
    # The namespace comes from the path.
    assert reply.json()["metadata"]["namespace"] == "ns1"
    assert engine.calls[0]["exact_names"] is False


async def test_put_yaml_body_keeps_timestamps_as_text(tmp_path: Path, engine: FakeEngine) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        reply = await srv.put(
            put_path(), data=yaml.safe_dump(VM, sort_keys=False), headers={"Content-Type": "application/yaml"}
        )
    assert reply.status == 200, reply.body
    assert reply.json()["metadata"]["creationTimestamp"] == "2024-01-02T03:04:05Z"


async def test_put_json_with_charset_and_matching_namespace(tmp_path: Path, engine: FakeEngine) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        reply = await srv.put(
            put_path("default"),
            data=orjson.dumps(VM),
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
    assert reply.status == 200


@pytest.mark.parametrize(
    ("query", "presets", "validate"),
    [
        ("", False, False),
        ("?presets=true", True, False),
        ("?validate=1", False, True),
        ("?presets=false&validate=true", False, True),
        ("?presets=0&validate=0", False, False),
        ("?presets=TRUE&validate=True", True, True),
    ],
)
async def test_query_flags_reach_the_renderer(
    tmp_path: Path, engine: FakeEngine, query: str, presets: bool, validate: bool
) -> None:
    async with running_server(MemorySource([VM]), tmp_path) as srv:
        assert (await srv.get(vm_path(name="vm1") + query)).status == 200
        assert (await srv.put(put_path() + query, json_body=VM)).status == 200
    for call in engine.calls:
        assert (call["presets"], call["validate"]) == (presets, validate)


async def test_etag_and_if_none_match(tmp_path: Path, engine: FakeEngine) -> None:
    async with running_server(MemorySource([VM]), tmp_path) as srv:
        first = await srv.get(vm_path(name="vm1"))
        etag = first.headers["etag"]
        assert etag.startswith('"') and etag.endswith('"')
        again = await srv.get(vm_path(name="vm1"), headers={"If-None-Match": etag})
        listed = await srv.get(vm_path(name="vm1"), headers={"If-None-Match": f'"other", W/{etag}'})
        stale = await srv.get(vm_path(name="vm1"), headers={"If-None-Match": '"stale"'})
        yaml_reply = await srv.get(
            vm_path(name="vm1"), headers={"Accept": "application/yaml", "If-None-Match": etag}
        )
    assert again.status == 304 and again.body == b"" and again.headers["etag"] == etag
    assert listed.status == 304
    assert stale.status == 200 and stale.headers["etag"] == etag
    # Another representation has other bytes, hence another ETag.
    assert yaml_reply.status == 200 and yaml_reply.headers["etag"] != etag


async def test_warnings_become_warning_headers(tmp_path: Path, engine: FakeEngine) -> None:
    engine.warnings = ['preset "clock" conflicts with the VM', "second warning"]
    async with running_server(MemorySource([VM]), tmp_path) as srv:
        replies = [
            await srv.get(vm_path(name="vm1") + "?presets=true"),
            await srv.put(put_path(), json_body=VM),
        ]
    for reply in replies:
        assert reply.status == 200
        assert reply.header_lists["warning"] == [
            '299 - "preset \\"clock\\" conflicts with the VM"',
            '299 - "second warning"',
        ]


CONFLICT = ExpandError.invalid(
    "VM field(s) spec.template.spec.domain.cpu.sockets conflicts with selected instance type",
    Cause("spec.template.spec.domain.cpu.sockets", "conflicts with the instancetype"),
    name="vm1",
)


async def test_expand_error_is_sent_as_the_renderer_built_it(tmp_path: Path, engine: FakeEngine) -> None:
    engine.error = CONFLICT
    async with running_server(MemorySource([VM]), tmp_path) as srv:
        for reply in (await srv.get(vm_path(name="vm1")), await srv.put(put_path(), json_body=VM)):
            assert reply.status == 422
            assert reply.json() == CONFLICT.status
        metrics = (await srv.get("/metrics")).body.decode()
    assert 'kubevirt_expand_render_errors_total{reason="Invalid"} 2.0' in metrics


async def test_kubevirt_error_codes_map_get_500_and_put_400(tmp_path: Path, engine: FakeEngine) -> None:
    engine.error = CONFLICT
    async with running_server(MemorySource([VM]), tmp_path, kubevirt_error_codes=True) as srv:
        got = await srv.get(vm_path(name="vm1"))
        put = await srv.put(put_path(), json_body=VM)
    assert got.status == 500
    assert got.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {CONFLICT.message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": CONFLICT.message}]},
        "code": 500,
    }
    assert put.status == 400
    assert put.json()["reason"] == "BadRequest"
    assert put.json()["message"] == CONFLICT.message
    assert "details" not in put.json()


async def test_v1alpha3_and_custom_group(tmp_path: Path, engine: FakeEngine) -> None:
    async with running_server(
        MemorySource([VM]), tmp_path, api_group="expand.example.org", api_versions=("v1beta1",)
    ) as srv:
        ok = await srv.get(vm_path(name="vm1", version="v1beta1", group="expand.example.org"))
        gone = await srv.get(vm_path(name="vm1"))
    assert ok.status == 200
    assert gone.status == 404
    async with running_server(MemorySource([VM]), tmp_path) as srv:
        assert (await srv.get(vm_path(name="vm1", version="v1alpha3"))).status == 200
        assert (await srv.put(put_path(version="v1alpha3"), json_body=VM)).status == 200
