"""The real engine behind the real server: results equal the Python API's, errors are the contract's rows.

Served from the examples folder (the README's run command) through the folder source.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver import ExpandError, expand, expand_vm
from apiserver.documents.manifests import read_manifest_paths
from apiserver.sources.folder import FolderSource
from tests.support.http_helpers import (
    EXAMPLES,
    RunningServer,
    examples_server,
    put_path,
    replace_file,
    running_server,
    vm_path,
)
from tests.support.waiting import eventually

OBJECTS = [obj for _, obj in read_manifest_paths([str(EXAMPLES)])]
KUBEVIRT = next(o for o in OBJECTS if o["kind"] == "KubeVirt")
VMS = {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == "VirtualMachine"}


def expected(name: str, **kw: Any) -> dict[str, Any]:
    return expand(VMS[name], OBJECTS, KUBEVIRT, **kw).vm


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with examples_server(tmp_path) as running:
        yield running


@pytest.mark.parametrize("name", sorted(VMS))
@pytest.mark.parametrize("version", ["v1", "v1alpha3"])
async def test_get_equals_the_python_api(srv: RunningServer, name: str, version: str) -> None:
    reply = await srv.get(vm_path(name=name, version=version), headers={"Accept": "application/json, */*"})
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == expected(name)


async def test_user_guide_example_is_expanded(srv: RunningServer) -> None:
    vm = (await srv.get(vm_path(name="fedora"))).json()
    domain = vm["spec"]["template"]["spec"]["domain"]
    assert domain["cpu"] == {"cores": 1, "sockets": 1, "threads": 1}  # cmedium: 1 vCPU
    assert domain["memory"] == {"guest": "1Gi"}
    assert domain["firmware"]["bootloader"]["efi"]["secureBoot"] is True  # the fedora preference
    assert [d["disk"]["bus"] for d in domain["devices"]["disks"]] == ["virtio", "virtio"]
    assert "instancetype" not in vm["spec"] and "preference" not in vm["spec"]


@pytest.mark.parametrize("name", sorted(VMS))
async def test_put_equals_the_python_api(srv: RunningServer, name: str) -> None:
    vm = copy.deepcopy(VMS[name])
    del vm["metadata"]["namespace"]
    reply = await srv.put(put_path("default"), json_body=vm)
    assert reply.status == 200, reply.body
    assert reply.json() == expected(name)


async def test_put_yaml_in_yaml_out(srv: RunningServer) -> None:
    reply = await srv.put(
        put_path(),
        data=yaml.safe_dump(VMS["fedora"]),
        headers={"Content-Type": "application/yaml", "Accept": "application/yaml"},
    )
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"] == "application/yaml"
    assert yaml.safe_load(reply.body) == expected("fedora")


async def test_presets_query_applies_presets_and_warns(srv: RunningServer) -> None:
    plain = await srv.get(vm_path(name="fedora-pinned"))
    with_presets = await srv.get(vm_path(name="fedora-pinned") + "?presets=true")
    put = await srv.put(put_path() + "?presets=true", json_body=VMS["fedora-pinned"])
    want = expected("fedora-pinned", presets=True)
    assert with_presets.json() == want == put.json()
    assert with_presets.json() != plain.json()
    assert "warning" not in plain.headers
    for reply in (with_presets, put):
        warnings = reply.header_lists["warning"]
        assert warnings and all(w.startswith('299 - "') for w in warnings)
        assert any("VirtualMachineInstancePresets" in w for w in warnings)
    assert with_presets.headers["etag"] != plain.headers["etag"]


PICKY_PREFERENCE = {
    "apiVersion": "instancetype.kubevirt.io/v1beta1",
    "kind": "VirtualMachinePreference",
    "metadata": {"name": "needs-4-cpus", "namespace": "default"},
    "spec": {"requirements": {"cpu": {"guest": 4}}},
}


async def test_validate_query_runs_the_admission_checks(tmp_path: Path) -> None:
    directory = tmp_path / "objects"
    shutil.copytree(EXAMPLES, directory)
    (directory / "picky.yaml").write_text(yaml.safe_dump(PICKY_PREFERENCE))
    vm = copy.deepcopy(VMS["fedora"])
    vm["spec"]["preference"] = {"kind": "VirtualMachinePreference", "name": "needs-4-cpus"}
    async with running_server(FolderSource(directory, watch=False), tmp_path) as srv:
        without = await srv.put(put_path(), json_body=vm)
        checked = await srv.put(put_path() + "?validate=true", json_body=vm)
    assert without.status == 200
    objects = [*OBJECTS, PICKY_PREFERENCE]
    with pytest.raises(ExpandError) as err:
        expand_vm(vm, objects, KUBEVIRT, validate=True)
    assert checked.status == 422
    assert checked.json() == err.value.status
    assert checked.json()["details"]["causes"]


def broken(change: str) -> dict[str, Any]:
    vm = copy.deepcopy(VMS["fedora"])
    if change == "missing":
        vm["spec"]["instancetype"]["name"] = "nope"
    elif change == "conflict":
        vm["spec"]["template"]["spec"]["domain"]["cpu"] = {"sockets": 2}
    elif change == "kind":
        vm["spec"]["instancetype"]["kind"] = "Bogus"
    return vm


@pytest.mark.parametrize(
    ("change", "field", "cause_reason", "message"),
    [
        (
            "missing",
            "spec.instancetype.name",
            "FieldValueNotFound",
            'virtualmachineinstancetypes.instancetype.kubevirt.io "nope" not found',
        ),
        (
            "conflict",
            "spec.template.spec.domain.cpu.sockets",
            "FieldValueInvalid",
            "VM field(s) spec.template.spec.domain.cpu.sockets conflicts with selected instance type",
        ),
        (
            "kind",
            "spec.instancetype.kind",
            "FieldValueNotSupported",
            "got unexpected kind in InstancetypeMatcher: Bogus",
        ),
    ],
)
async def test_expand_failures_are_422_with_kubevirt_text(
    srv: RunningServer, change: str, field: str, cause_reason: str, message: str
) -> None:
    reply = await srv.put(put_path(), json_body=broken(change))
    assert reply.status == 422
    body = reply.json()
    assert (body["kind"], body["reason"], body["message"]) == ("Status", "Invalid", message)
    assert [(c["field"], c["reason"]) for c in body["details"]["causes"]] == [(field, cause_reason)]


async def test_expand_failure_with_kubevirt_codes(tmp_path: Path) -> None:
    directory = tmp_path / "objects"
    shutil.copytree(EXAMPLES, directory)
    (directory / "broken-vm.yaml").write_text(
        yaml.safe_dump({**broken("missing"), "metadata": {"name": "broken", "namespace": "default"}})
    )
    message = 'virtualmachineinstancetypes.instancetype.kubevirt.io "nope" not found'
    async with running_server(
        FolderSource(directory, watch=False), tmp_path, kubevirt_error_codes=True
    ) as srv:
        got = await srv.get(vm_path(name="broken"))
        put = await srv.put(put_path(), json_body=broken("missing"))
    assert got.status == 500
    assert got.json()["message"] == f"Internal error occurred: {message}"
    assert got.json()["details"] == {"causes": [{"message": message}]}
    assert put.status == 400
    assert put.json()["message"] == message


async def test_folder_change_is_served_without_restart(tmp_path: Path) -> None:
    directory = tmp_path / "objects"
    shutil.copytree(EXAMPLES, directory)
    source = FolderSource(directory, poll_interval=0.05, watch=False)
    async with running_server(source, tmp_path) as srv:
        before = (await srv.get(vm_path(name="fedora"))).json()
        text = (directory / "instancetypes.yaml").read_text().replace("1Gi", "2Gi")
        reloads = source.reloads
        replace_file(directory / "instancetypes.yaml", text)
        await eventually(lambda: source.reloads != reloads, 5, "the change read")
        after = (await srv.get(vm_path(name="fedora"))).json()
    assert before["spec"]["template"]["spec"]["domain"]["memory"]["guest"] == "1Gi"
    assert after["spec"]["template"]["spec"]["domain"]["memory"]["guest"] == "2Gi"
