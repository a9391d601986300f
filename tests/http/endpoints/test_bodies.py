"""PUT bodies as users and hostile clients send them: YAML however labelled, empty and several documents,
and every kind of bad body answered with a small Status, never a 500 or a stall."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from apiserver import expand
from apiserver.documents.manifests import read_manifest_paths
from apiserver.http.endpoints import expand as expand_endpoint
from tests.support.http_helpers import EXAMPLES, MemorySource, RunningServer, put_path, running_server

OBJECTS = [obj for _, obj in read_manifest_paths([str(EXAMPLES)])]
KUBEVIRT = next(o for o in OBJECTS if o["kind"] == "KubeVirt")
FEDORA_YAML = (EXAMPLES / "vm-fedora.yaml").read_bytes()
FEDORA = next(o for o in OBJECTS if o["kind"] == "VirtualMachine" and o["metadata"]["name"] == "fedora")
HEAD = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: vm1\n"
SPEC = "spec:\n  template:\n    spec:\n      domain:\n        devices: {}\n"


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(MemorySource(OBJECTS, kubevirt_cr=KUBEVIRT), tmp_path) as server:
        yield server


async def put(srv: RunningServer, body: bytes | str, content_type: str | None = "application/yaml") -> Any:
    headers = {"Content-Type": content_type} if content_type else {}
    return await srv.put(put_path() + "?fieldValidation=Ignore", data=body, headers=headers)


def status_of(reply: Any, code: int) -> dict[str, Any]:
    assert reply.status == code, reply.body[:500]
    body: dict[str, Any] = reply.json()
    assert body["kind"] == "Status" and body["code"] == code
    return body


# --- YAML bodies that work ---------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml", None])
async def test_the_example_file_whatever_it_is_labelled(srv: RunningServer, content_type: str | None) -> None:
    reply = await put(srv, FEDORA_YAML, content_type)
    assert reply.status == 200, reply.body
    assert reply.json() == expand(FEDORA, OBJECTS, KUBEVIRT).vm


@pytest.mark.parametrize(
    "body",
    [FEDORA_YAML + b"---\n", b"---\n" + FEDORA_YAML + b"---\n# the end\n---\n", FEDORA_YAML + b"...\n"],
    ids=["trailing", "around", "end-marker"],
)
async def test_empty_documents_around_the_vm_are_skipped(srv: RunningServer, body: bytes) -> None:
    reply = await put(srv, body)
    assert reply.status == 200, reply.body
    assert reply.json() == expand(FEDORA, OBJECTS, KUBEVIRT).vm


async def test_several_documents_are_one_400_naming_each(srv: RunningServer) -> None:
    body = status_of(await put(srv, (EXAMPLES / "vm-fedora-pinned.yaml").read_bytes()), 400)
    assert body["message"] == (
        "the request body holds 2 documents (document 1: VirtualMachine, document 2: ControllerRevision); "
        "send one VirtualMachine"
    )
    body = status_of(await put(srv, b'{"kind": "VirtualMachine"}\n[1]\n', "application/json"), 400)
    assert "holds 2 documents (document 1: VirtualMachine, document 2: a list)" in body["message"]


async def test_only_empty_documents(srv: RunningServer) -> None:
    body = status_of(await put(srv, b"---\n# nothing\n---\n"), 400)
    assert body["message"] == "the request body holds only empty documents: send one VirtualMachine"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            HEAD + "spec:\n  template: {spec: {domain: {devices: {}}}\n",
            "the request body is not valid YAML: document 1, line 7: did not find expected ',' or '}'",
        ),
        (
            HEAD + "---\n" + HEAD + "  labels: a: b\n",
            "the request body is not valid YAML: document 2, line 10: mapping values are not allowed",
        ),
        ('{"kind": "VirtualMachine",\n "spec": [1,}', "the request body is not valid JSON: line 2: "),
    ],
)
async def test_syntax_errors_say_document_and_line(srv: RunningServer, body: str, message: str) -> None:
    got = status_of(await put(srv, body), 400)["message"]
    assert got.startswith(message), got
    assert "\n" not in got


@pytest.mark.parametrize("content_type", ["text/plain", "application/vnd.kubernetes.protobuf"])
async def test_other_media_types_stay_415(srv: RunningServer, content_type: str) -> None:
    status_of(await put(srv, FEDORA_YAML, content_type), 415)


# --- hostile and careless bodies: small 400s, never a 500 -------------------------------------------

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
# Typed lists aliased to each other inside the VM (2.4 KB -> 41 MB before).
TYPED_BOMB = (
    HEAD
    + "spec:\n  template:\n    spec:\n      domain: {devices: {}}\n      affinity:\n        nodeAffinity:\n"
    + "          requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n"
    + "            - matchExpressions: &e\n"
    + "              - {key: k, operator: In, values: &v [a, b, c, d, e, f, g, h, i, j]}\n"
    + "".join(
        f"              - {{key: k{i}, operator: In, values: [*v, *v, *v, *v, *v, *v, *v, *v]}}\n"
        for i in range(10)
    )
    + "".join("            - matchExpressions: *e\n" for _ in range(200))
)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            HEAD + "  managedFields:\n  - fieldsV1:\n      " + BOMB.replace("\n", "\n      "),
            "too much aliasing",
        ),
        (TYPED_BOMB, "too much aliasing"),
        (HEAD + "  labels: &a {x: *a}\n", 'anchor "a" value contains itself'),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 100 levels"),
        (HEAD + "  x: " + "[" * 10_000 + "]" * 10_000 + "\n", "nested deeper than 100 levels"),
        (
            '{"metadata": {"managedFields": [{"fieldsV1": ' + '{"f:a": ' * 300 + "{}" + "}" * 300 + "}]}}",
            "metadata.managedFields[0].fieldsV1.f:a.f:a",
        ),
        (HEAD + "  labels: {~: a}\n" + SPEC, "metadata.labels: a null mapping key is not supported"),
        (HEAD + "  generation: .nan\n" + SPEC, "metadata.generation: .nan is not a JSON number"),
        ('{"metadata": {"generation": 1' + "0" * 5000 + "}}", "number out of range"),
    ],
    ids=[
        "alias-bomb",
        "typed-lists",
        "recursive",
        "deep-flow",
        "deep-in-vm",
        "deep-json",
        "null-key",
        "nan",
        "huge-json-int",
    ],
)
async def test_refused_with_a_small_400(srv: RunningServer, body: str, fragment: str) -> None:
    reply = await put(srv, body)
    status = status_of(reply, 400)
    assert fragment in status["message"]
    assert len(reply.body) < 1200
    assert "Traceback" not in status["message"] and "Error" not in status["message"]


async def test_yaml_types_and_keys_become_json(srv: RunningServer) -> None:
    body = (
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: !!binary dm0x\n"
        "  creationTimestamp: !!timestamp 2024-05-01T10:00:00Z\n  labels: !!set {a, b}\n"
        "  annotations: {1: one, true: yes-text}\n"
        "  managedFields:\n  - manager: m\n    fieldsV1: {f:x: !!set {c}, f:big: 100000000000000000000000}\n"
        + SPEC
    )
    reply = await put(srv, body)
    assert reply.status == 200, reply.body
    meta = reply.json()["metadata"]
    assert meta["name"] == "vm1"
    assert meta["creationTimestamp"] == "2024-05-01T10:00:00Z"
    assert meta["labels"] == {"a": "", "b": ""}  # nulls in a map of strings, as Go decodes them
    assert meta["annotations"] == {"1": "one", "true": "yes-text"}
    # Beyond 64 bits a YAML integer is a float, as kubectl reads it.
    assert meta["managedFields"][0]["fieldsV1"] == {"f:x": {"c": None}, "f:big": 1e23}


async def test_json_integers_beyond_64_bits_come_back_exactly(srv: RunningServer) -> None:
    big = 2**70 + 1
    body = (
        '{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "vm1", '
        f'"managedFields": [{{"manager": "m", "fieldsV1": {{"f:x": {big}}}}}]}}, '
        '"spec": {"template": {"spec": {"domain": {"devices": {}}}}}}'
    )
    reply = await put(srv, body, "application/json")
    assert reply.status == 200, reply.body
    assert f'"f:x":{big}'.encode() in reply.body


@pytest.mark.parametrize(
    ("memory", "fragment"),
    [("12345" * 1000, "at most 4000 significant digits"), ("1" + "0" * 5000, None)],
    ids=["5000-significant-digits", "1e5000"],
)
async def test_huge_quantities(srv: RunningServer, memory: str, fragment: str | None) -> None:
    body = HEAD + SPEC.replace(
        "devices: {}", f"devices: {{}}\n        resources: {{requests: {{memory: {memory}}}}}"
    )
    reply = await put(srv, body)
    if fragment is None:
        assert reply.status == 200, reply.body
        assert reply.json()["spec"]["template"]["spec"]["domain"]["resources"]["requests"]["memory"] == "100"
    else:
        assert fragment in status_of(reply, 422)["message"]


# --- a large body does not stall the server ------------------------------------------------------------


def large_yaml(limit: int = 3 * 1024 * 1024) -> bytes:
    """A VM in just under 3 MiB of the densest YAML: one-character flow scalars in fieldsV1."""
    head = (HEAD + "  managedFields:\n  - manager: m\n    fieldsV1:\n      f:x: [").encode()
    tail = ("1]\n" + SPEC).encode()
    count = (limit - len(head) - len(tail)) // 2
    return head + b"1," * count + tail


async def test_a_large_yaml_body_is_parsed_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = large_yaml()
    assert 3 * 1024 * 1024 - 16 < len(data) <= 3 * 1024 * 1024
    parsing = threading.Event()
    real_parse = expand_endpoint.parse

    def observed_parse(body: bytes, **kwargs: Any) -> Any:
        if len(body) != len(data):
            return real_parse(body, **kwargs)
        parsing.set()  # only signals: the real reader does the work
        try:
            return real_parse(body, **kwargs)
        finally:
            finished.append("large body parsed")

    monkeypatch.setattr(expand_endpoint, "parse", observed_parse)
    finished: list[str] = []
    async with running_server(MemorySource(), tmp_path) as srv:

        async def big() -> Any:
            return await put(srv, data)

        async def small() -> Any:
            await asyncio.to_thread(parsing.wait, 60)  # the loop cannot go on while it parses the body
            reply = await put(srv, HEAD + SPEC)
            finished.append("small request answered")
            return reply

        started = time.perf_counter()
        big_reply, small_reply = await asyncio.gather(big(), small())
        elapsed = time.perf_counter() - started
    assert small_reply.status == 200
    assert big_reply.status == 200, big_reply.body[:300]
    assert len(big_reply.json()["metadata"]["managedFields"][0]["fieldsV1"]["f:x"]) > 1_000_000
    assert finished == ["small request answered", "large body parsed"], f"({elapsed:.2f}s)"


async def test_the_request_timeout_still_applies_to_a_large_body(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path, request_timeout=0.2) as srv:
        reply = await srv.put(
            put_path() + "?fieldValidation=Ignore",
            data=large_yaml(),
            headers={"Content-Type": "application/yaml"},
        )
        assert status_of(reply, 504)["reason"] == "Timeout"
        after = await put(srv, HEAD + SPEC)
    assert after.status == 200
    assert json.loads(after.body)["metadata"]["name"] == "vm1"
