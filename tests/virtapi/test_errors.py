"""Failures, side by side with KubeVirt's virt-api: a VM that does not exist, bodies that are not a VM, a VM
for another namespace, conflicts and missing instancetypes. Ours runs with ``--kubevirt-error-codes``: by
default it answers as ../shared/spec/api-contract.md's table says (404 ``details.kind: virtualmachines``,
422 with causes for expand failures), where virt-api answers 404 ``virtualmachine``, GET 500 and PUT 400;
the flag gives virt-api's answers, and that is what is compared here (tests/http/test_errors.py holds the
contract's)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.virtapi.sides import Answer, Kube, Sides, place, store
from tests.virtapi.test_corpus import differences, report

VM: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm"},
    "spec": {
        "runStrategy": "Halted",
        "template": {"spec": {"domain": {"devices": {}}}},
    },
}
INSTANCETYPE: dict[str, Any] = {
    "apiVersion": "instancetype.kubevirt.io/v1beta1",
    "kind": "VirtualMachineInstancetype",
    "metadata": {"name": "small"},
    "spec": {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}},
}


def with_spec(**spec: Any) -> dict[str, Any]:
    vm: dict[str, Any] = json.loads(json.dumps(VM))
    vm["spec"].update(spec)
    return vm


def body(value: Any) -> bytes:
    return json.dumps(value).encode()


def assert_equal(what: str, answers: tuple[Answer, Answer]) -> Answer:
    assert not differences(*answers), report(what, *answers)
    return answers[0]


@pytest.fixture
def namespace(kube: Kube) -> str:
    name = f"e-{uuid.uuid4().hex[:8]}"
    kube.namespace(name)
    return name


def test_missing_vm(sides: Sides, namespace: str) -> None:
    ours = assert_equal("GET of a VM that does not exist", sides.get(namespace, "nope"))
    # virt-api's words, not the contract's default (see the module's docstring).
    assert ours.status == 404 and ours.body["message"] == 'virtualmachine.kubevirt.io "nope" not found'


def test_vm_in_a_namespace_that_does_not_exist(sides: Sides) -> None:
    ours = assert_equal("GET in a missing namespace", sides.get(f"gone-{uuid.uuid4().hex[:8]}", "vm"))
    assert ours.status == 404


# Bodies virt-api's handler refuses before expanding: Go's json.Unmarshal into a map, then KubeVirt's OpenAPI
# schema (go-openapi; ours: apiserver/render/admission/schema.py, the webhook's first stage).
BAD_BODIES = {
    "truncated": b'{"spec": {',
    "empty": b"",
    "blank": b"  \n",
    "a JSON array": b"[]",
    "a JSON string": b'"vm"',
    "a number": b"7",
    "true": b"true",
    "two documents": b'{"spec": {}} {}',
    "a bare word": b"vm",
    "a trailing comma": b'{"spec": {},}',
    "an unquoted key": b"{spec: {}}",
    "a bad escape": b'{"spec": {"x": "\\q"}}',
    "a control character in a string": b'{"spec": {"x": "\x01"}}',
    "a broken literal": b'{"spec": {"running": tru}}',
    "a broken number": b'{"spec": {"x": 1.}}',
    "null": b"null",
    "wrong type in the schema": body(with_spec(runStrategy=7)),
    "unknown member": body(with_spec(nonsense=True)),
    "unknown top-level member": body({**VM, "extra": 1}),
    "no spec": body({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "vm"}}),
    "several schema problems": body(with_spec(runStrategy=7, nonsense=True, template=[])),
    "input device without type": body(
        with_spec(template={"spec": {"domain": {"devices": {"inputs": [{"name": "tablet", "bus": "usb"}]}}}})
    ),
}
# Where ours answers otherwise by design (../shared/spec/api-contract.md): what differs, and why.
BY_DESIGN = {
    "not a VirtualMachine": (
        body({**VM, "kind": "Pod"}),
        "application/json",
        "ours refuses a body whose kind is not VirtualMachine (400); virt-api expands it and answers kind: Pod",
    ),
    "YAML": (
        b"apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: vm}\nspec: {}\n",
        "application/yaml",
        "ours reads YAML bodies (the contract); virt-api answers 415 in plain text",
    ),
}


@pytest.mark.parametrize("what", list(BAD_BODIES))
def test_bad_body(sides: Sides, namespace: str, what: str) -> None:
    ours = assert_equal(f"PUT of {what}", sides.put(namespace, BAD_BODIES[what]))
    assert ours.status == (200 if what == "input device without type" else 400)


@pytest.mark.parametrize("what", list(BY_DESIGN))
def test_bad_body_answered_otherwise_by_design(sides: Sides, namespace: str, what: str) -> None:
    data, media, why = BY_DESIGN[what]
    ours, theirs = sides.put(namespace, data, media)
    assert differences(ours, theirs), f"no longer differs ({why}): move it to BAD_BODIES"
    assert ours.status == 400 and theirs.status in (200, 415), report(why, ours, theirs)


def test_vm_for_another_namespace(sides: Sides, namespace: str) -> None:
    vm = json.loads(json.dumps(VM))
    vm["metadata"]["namespace"] = "elsewhere"
    ours = assert_equal("PUT of a VM of another namespace", sides.put(namespace, body(vm)))
    assert ours.status == 400


def test_missing_instancetype(sides: Sides, namespace: str) -> None:
    vm = with_spec(instancetype={"kind": "VirtualMachineInstancetype", "name": "absent"})
    ours = assert_equal("PUT with a missing instancetype", sides.put(namespace, body(vm)))
    assert ours.status == 400


def test_conflict_stored_and_sent(sides: Sides, kube: Kube) -> None:
    vm = with_spec(instancetype={"kind": "VirtualMachineInstancetype", "name": "small"})
    vm["spec"]["template"]["spec"]["domain"]["cpu"] = {"sockets": 4}
    placed = place(vm, [INSTANCETYPE], "conflict")
    stored, _ = store(kube, placed)
    got = assert_equal("GET of a VM that conflicts", sides.get(placed.namespace, placed.name))
    assert got.status == 500 and "conflicts with selected instance type" in got.body["message"]
    put = assert_equal("PUT of a VM that conflicts", sides.put(placed.namespace, body(stored)))
    assert put.status == 400
