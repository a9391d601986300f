"""The contract's error table, row by row, over real HTTPS (rows needing the engine: test_http_expand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apiserver.sources.base import SourceUnavailable
from tests.support.http_helpers import MemorySource, put_path, running_server, vm_path

VM: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm1", "namespace": "default"},
    "spec": {"template": {"spec": {"domain": {"devices": {}}}}},
}


def assert_status(reply: Any, code: int, reason: str) -> dict[str, Any]:
    assert reply.status == code, reply.body
    assert reply.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = reply.json()
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["code"] == code
    assert body["reason"] == reason
    assert body["message"]
    return body


@pytest.mark.parametrize(
    ("data", "content_type", "fragment"),
    [
        (b"{not json", "application/json", "the request body is not valid JSON: line 1: "),
        (b"[1, 2]", "application/json", "got a list"),
        (b'"a string"', None, "got a string"),
        (b"null", "application/json", "got null"),
        (b"", "application/json", "empty"),
        (b"a: [b", "application/yaml", "the request body is not valid YAML: document 1, line 2: "),
        (b"a: [b", "application/json", "the request body is not valid YAML: document 1, line 2: "),
        (b"- 1\n- 2\n", "application/yaml", "got a list"),
    ],
)
async def test_body_not_an_object_is_400(
    tmp_path: Path, data: bytes, content_type: str | None, fragment: str
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    async with running_server(MemorySource(), tmp_path) as srv:
        body = assert_status(await srv.put(put_path(), data=data, headers=headers), 400, "BadRequest")
    assert fragment in body["message"]


async def test_namespace_mismatch_is_422_with_cause(tmp_path: Path) -> None:
    vm = {**VM, "metadata": {"name": "vm1", "namespace": "other"}}
    async with running_server(MemorySource(), tmp_path) as srv:
        body = assert_status(await srv.put(put_path("default"), json_body=vm), 422, "Invalid")
    assert body["details"]["name"] == "vm1"
    assert body["details"]["group"] == "kubevirt.io"
    causes = body["details"]["causes"]
    assert [c["field"] for c in causes] == ["metadata.namespace"]
    assert "VM namespace must be empty or default" in causes[0]["message"]
    assert "metadata.namespace" in body["message"]


async def test_namespace_mismatch_with_kubevirt_codes_is_400(tmp_path: Path) -> None:
    vm = {**VM, "metadata": {"name": "vm1", "namespace": "other"}}
    async with running_server(MemorySource(), tmp_path, kubevirt_error_codes=True) as srv:
        body = assert_status(await srv.put(put_path("default"), json_body=vm), 400, "BadRequest")
    assert body["message"] == "VM namespace must be empty or default"


async def test_schema_invalid_body_is_422_with_field_causes(tmp_path: Path) -> None:
    vm = {
        **VM,
        "metadata": {"name": "vm1", "labels": []},
        "spec": {"running": "yes", "template": {"spec": {"domain": {"devices": {}}}}, "bogusField": 1},
    }
    strict = put_path() + "?fieldValidation=Strict"
    async with running_server(MemorySource(), tmp_path) as srv:
        body = assert_status(await srv.put(strict, json_body=vm), 422, "Invalid")
        no_spec = assert_status(await srv.put(strict, json_body={"metadata": {"name": "x"}}), 422, "Invalid")
        # no spec is refused at every level, the default (Warn) too
        assert_status(await srv.put(put_path(), json_body={"metadata": {"name": "x"}}), 422, "Invalid")
    causes = {c["field"]: c for c in body["details"]["causes"]}
    assert set(causes) == {"metadata.labels", "spec.running", "spec.bogusField"}
    assert causes["spec.bogusField"]["reason"] == "FieldValueUnknownField"
    assert causes["spec.running"]["reason"] == "FieldValueTypeInvalid"
    assert body["message"].startswith('VirtualMachine.kubevirt.io "vm1" is invalid: [')
    assert body["details"]["name"] == "vm1"
    assert [(c["field"], c["reason"]) for c in no_spec["details"]["causes"]] == [
        ("spec", "FieldValueRequired")
    ]


async def test_schema_invalid_body_with_kubevirt_codes_is_400(tmp_path: Path) -> None:
    vm = {**VM, "spec": {"running": "yes", "template": {"spec": {"domain": {"devices": {}}}}}}
    async with running_server(MemorySource(), tmp_path, kubevirt_error_codes=True) as srv:
        body = assert_status(await srv.put(put_path(), json_body=vm), 400, "BadRequest")
    assert body["message"] == "Object is not a valid VirtualMachine"
    # In go-openapi's words, as virt-api's schema check words it (tests/virtapi compares with the real one).
    assert body["details"]["causes"] == [
        {"message": 'spec.running in body must be of type boolean: "string"'}
    ]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "unexpected end of JSON input"),
        (b'{"spec": {', "unexpected end of JSON input"),
        (b"[]", "json: cannot unmarshal array into Go value of type map[string]interface {}"),
        (b'{"spec": {}} {}', "invalid character '{' after top-level value"),
    ],
)
async def test_undecodable_body_with_kubevirt_codes_in_gos_words(
    tmp_path: Path, data: bytes, problem: str
) -> None:
    async with running_server(MemorySource(), tmp_path, kubevirt_error_codes=True) as srv:
        reply = await srv.put(put_path(), data=data, headers={"Content-Type": "application/json"})
    body = assert_status(reply, 400, "BadRequest")
    assert body["message"] == f"Can not unmarshal Request body to struct, error: {problem}"


async def test_missing_vm_is_404_with_api_server_text(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        body = assert_status(await srv.get(vm_path(name="ghost")), 404, "NotFound")
    assert body["message"] == 'virtualmachines.kubevirt.io "ghost" not found'
    assert body["details"] == {"name": "ghost", "group": "kubevirt.io", "kind": "virtualmachines"}


async def test_missing_vm_with_kubevirt_codes_uses_virt_api_text(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path, kubevirt_error_codes=True) as srv:
        body = assert_status(await srv.get(vm_path(name="ghost")), 404, "NotFound")
    assert body["message"] == 'virtualmachine.kubevirt.io "ghost" not found'
    assert body["details"] == {"name": "ghost", "group": "kubevirt.io", "kind": "virtualmachine"}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [("POST", put_path(), "PUT"), ("DELETE", vm_path(), "GET"), ("PUT", vm_path(), "GET")],
)
async def test_wrong_method_is_405_status_with_allow(
    tmp_path: Path, method: str, path: str, allowed: str
) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        reply = await srv.request(method, path, data=b"{}")
    assert_status(reply, 405, "MethodNotAllowed")
    assert allowed in reply.headers["allow"]


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/merge-patch+json"]
)
async def test_unsupported_body_media_type_is_415(tmp_path: Path, content_type: str) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        reply = await srv.put(put_path(), data=b"{}", headers={"Content-Type": content_type})
    body = assert_status(reply, 415, "UnsupportedMediaType")
    assert content_type in body["message"]
    assert "application/json" in body["message"]


@pytest.mark.parametrize(
    "accept", ["text/html", "application/vnd.kubernetes.protobuf", "application/json;q=0"]
)
@pytest.mark.parametrize("method", ["GET", "PUT"])
async def test_unacceptable_accept_is_406(tmp_path: Path, accept: str, method: str) -> None:
    path = vm_path(name="vm1") if method == "GET" else put_path()
    async with running_server(MemorySource([VM]), tmp_path) as srv:
        reply = await srv.request(
            method, path, headers={"Accept": accept}, data=None if method == "GET" else b"{}"
        )
    body = assert_status(reply, 406, "NotAcceptable")
    assert "application/json" in body["message"]


async def test_body_over_3_mib_is_413(tmp_path: Path) -> None:
    big = b'{"metadata": {"annotations": {"a": "' + b"x" * (3 * 1024 * 1024) + b'"}}}'
    async with running_server(MemorySource(), tmp_path) as srv:
        body = assert_status(await srv.put(put_path(), data=big), 413, "RequestEntityTooLarge")
    assert str(3 * 1024 * 1024) in body["message"]


@pytest.mark.parametrize(
    ("slow", "code", "reason"), [(False, 503, "ServiceUnavailable"), (True, 504, "Timeout")]
)
@pytest.mark.parametrize("method", ["GET", "PUT"])
async def test_source_unavailable_is_503_or_504_with_retry_after(
    tmp_path: Path, slow: bool, code: int, reason: str, method: str
) -> None:
    outage = SourceUnavailable("the Kubernetes API did not answer", timeout=slow, retry_after=7)
    vm_with_type = {**VM, "spec": {**VM["spec"], "instancetype": {"name": "cmedium"}}}
    source = MemorySource([VM], outage=outage)
    async with running_server(source, tmp_path) as srv:
        if method == "GET":
            reply = await srv.get(vm_path(name="vm1"))
        else:
            reply = await srv.put(put_path(), json_body=vm_with_type)
    body = assert_status(reply, code, reason)
    assert reply.headers["retry-after"] == "7"
    assert body["details"]["retryAfterSeconds"] == 7
    assert "did not answer" in body["message"]


async def test_request_timeout_is_504(tmp_path: Path) -> None:
    async with running_server(MemorySource([VM], delay=2), tmp_path, request_timeout=0.3) as srv:
        reply = await srv.get(vm_path(name="vm1"))
    body = assert_status(reply, 504, "Timeout")
    assert "0.3s" in body["message"]
    assert reply.headers["retry-after"] == "1"


async def test_a_bug_is_500_status_not_a_traceback(tmp_path: Path) -> None:
    async with running_server(MemorySource([VM], failure=KeyError("boom")), tmp_path) as srv:
        body = assert_status(await srv.get(vm_path(name="vm1")), 500, "InternalError")
    assert body["message"].startswith("Internal error occurred: ")
    assert "Traceback" not in body["message"]


async def test_unknown_path_is_404_status(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        for path in ("/nothing", "/apis/subresources.kubevirt.io/v9", "/apis/other.group/v1"):
            body = assert_status(await srv.get(path), 404, "NotFound")
            assert body["message"] == "the server could not find the requested resource"


@pytest.mark.parametrize("value", ["yes", "2", "TRUEISH"])
@pytest.mark.parametrize("name", ["presets", "validate"])
async def test_bad_query_flag_is_400_naming_it(tmp_path: Path, name: str, value: str) -> None:
    async with running_server(MemorySource([VM]), tmp_path) as srv:
        for reply in (
            await srv.get(vm_path(name="vm1") + f"?{name}={value}"),
            await srv.put(put_path() + f"?{name}={value}", json_body=VM),
        ):
            body = assert_status(reply, 400, "BadRequest")
            assert f'"{name}"' in body["message"]
            assert value in body["message"]


async def test_large_undecodable_body_with_kubevirt_codes_is_refused_without_a_byte_wise_scan(
    tmp_path: Path,
) -> None:
    # Over 64 KiB Go's words would cost a Python pass per token (a 3 MiB list of numbers took seconds):
    # such a body is refused in orjson's words instead, still as virt-api's 400.
    data = b'{"spec": {"x": [' + b"1," * 40_000 + b"]}}"
    async with running_server(MemorySource(), tmp_path, kubevirt_error_codes=True) as srv:
        reply = await srv.put(put_path(), data=data, headers={"Content-Type": "application/json"})
    body = assert_status(reply, 400, "BadRequest")
    assert body["message"].startswith("Can not unmarshal Request body to struct, error: ")
    assert "looking for beginning of value" not in body["message"]  # not the byte-wise reader's words
