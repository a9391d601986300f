"""POST virtualmachinechangepreviews: the change preview over HTTP, on a folder that holds a running VM
(its VMI as KubeVirt made it, its start revision), as kubectl create sends it."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.render.golang import gojson
from apiserver.render.vmcontroller.revision import revision_data
from apiserver.sources.folder import FolderSource
from tests.support.http_helpers import RunningServer, running_server

CORPUS = Path(__file__).resolve().parents[2] / "render" / "vmcontroller" / "corpus"
PATH = "/apis/expand.kubevirt-expand.io/v1/namespaces/default/virtualmachinechangepreviews"
CASE = "u1.medium -> u1.xlarge (LiveUpdate)"


def _case(family: str, name: str) -> dict[str, Any]:
    with gzip.open(CORPUS / f"{family}.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["name"] == name:
                return record["input"]  # type: ignore[no-any-return]
    raise AssertionError(name)


def running_folder(
    directory: Path, inp: dict[str, Any], *, edit_medium: bool = False, start: str | None = None
) -> None:
    """A folder holding the VM as stored (as started), its running VMI, its start revision, the objects
    and the KubeVirt CR; ``start``: the revision the VMI names instead (a StatefulSet's, :data:`STS`)."""
    vm = copy.deepcopy(inp["startVM"])
    uid, generation = vm["metadata"]["uid"], vm["metadata"]["generation"]
    revision_name = f"revision-start-vm-{uid}-{generation}"
    vmi = copy.deepcopy(inp["vmi"])
    vmi["status"]["virtualMachineRevisionName"] = start or revision_name
    owner = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "name": vm["metadata"]["name"],
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": revision_name, "namespace": "default", "ownerReferences": [owner]},
        "data": revision_data(gojson.decode(vm, "VirtualMachine")),
        "revision": generation,
    }
    kubevirt = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
        "spec": {"configuration": inp["kubevirt"] or {}},
    }
    bigger = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": "u1.8xlarge"},
        "spec": {"cpu": {"guest": 32}, "memory": {"guest": "128Gi"}},
    }
    objects = copy.deepcopy(inp["objects"])
    if edit_medium:  # u1.medium edited since the VM captured it: 4Gi -> 6Gi
        live = next(
            o for o in objects if o["kind"].endswith("Instancetype") and o["metadata"]["name"] == "u1.medium"
        )
        live["spec"]["memory"]["guest"] = "6Gi"
        live["metadata"]["generation"] = 2
    docs = [vm, vmi, revision, kubevirt, bigger, STS, *objects]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cluster.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))


# A StatefulSet's revision in the VM's namespace whose data reads as a VM spec with a password in it.
STS = {
    "apiVersion": "apps/v1",
    "kind": "ControllerRevision",
    "metadata": {
        "name": "web-7d9f",
        "namespace": "default",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "0f0f", "controller": True}
        ],
    },
    "data": {
        "spec": {
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [{"name": "c", "cloudInitNoCloud": {"userData": "pw: STS-SECRET"}}],
                }
            }
        }
    },
    "revision": 1,
}


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    inp = _case("instancetype-switch", CASE)
    running_folder(tmp_path / "cluster", inp)
    async with running_server(FolderSource(tmp_path / "cluster", watch=False), tmp_path) as running:
        yield running


def review(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "expand.kubevirt-expand.io/v1",
        "kind": "VirtualMachineChangePreview",
        "metadata": {"name": "try"},
        "spec": spec,
    }


async def test_a_bigger_instancetype_within_max_sockets_is_live(srv: RunningServer) -> None:
    target = _case("instancetype-switch", CASE)["vm"]["spec"]["instancetype"]
    reply = await srv.request("POST", PATH, json_body=review(vmName="vm-switch", instancetype=target))
    assert reply.status == 201, reply.body
    answer = reply.json()
    assert answer["kind"] == "VirtualMachineChangePreview"
    assert answer["metadata"] == {"namespace": "default", "name": "try"}
    status = answer["status"]
    assert status["verdict"] == "live"
    assert {"path": "/spec/domain/cpu/sockets", "value": 4} in status["liveUpdates"]
    assert {"op": "replace", "path": "/spec/template/spec/domain/cpu/sockets", "value": 4} in status["patch"]


async def test_beyond_max_sockets_says_restart_with_kubevirts_message(srv: RunningServer) -> None:
    target = {"name": "u1.8xlarge", "kind": "VirtualMachineClusterInstancetype"}
    reply = await srv.request("POST", PATH, json_body=review(vmName="vm-switch", instancetype=target))
    assert reply.status == 201, reply.body
    status = reply.json()["status"]
    assert status["verdict"] == "restart"
    assert status["message"] == "CPU sockets updated in template spec to a value higher than what's available"


async def test_an_unchanged_vm_is_live_with_an_empty_patch(srv: RunningServer) -> None:
    reply = await srv.request("POST", PATH, json_body=review(vmName="vm-switch"))
    status = reply.json()["status"]
    assert (status["verdict"], status["patch"], status["changes"]) == ("live", [], [])


async def test_yaml_is_answered_as_yaml(srv: RunningServer) -> None:
    reply = await srv.request(
        "POST", PATH, json_body=review(vmName="vm-switch"), headers={"Accept": "application/yaml"}
    )
    assert reply.status == 201
    assert yaml.safe_load(reply.body)["status"]["verdict"] == "live"


async def test_a_vm_that_does_not_exist_is_404(srv: RunningServer) -> None:
    reply = await srv.request("POST", PATH, json_body=review(vmName="nope"))
    assert reply.status == 404
    assert reply.json()["message"] == 'virtualmachines.kubevirt.io "nope" not found'


@pytest.mark.parametrize(
    ("spec", "fields"),
    [
        ({}, ["spec.vmName"]),
        (
            {"vmName": "vm-switch", "instancetype": {"kind": "Pod"}},
            ["spec.instancetype.name", "spec.instancetype.kind"],
        ),
        ({"virtualMachine": {}, "upgrade": True}, ["spec.upgrade"]),
        ({"vmName": "vm-switch", "running": {}}, ["spec.running"]),
        ({"vmName": 3}, ["spec.vmName"]),
    ],
)
async def test_bad_requests_name_their_fields(
    srv: RunningServer, spec: dict[str, Any], fields: list[str]
) -> None:
    reply = await srv.request("POST", PATH, json_body=review(**spec))
    assert reply.status == 422, reply.body
    body = reply.json()
    assert body["details"]["kind"] == "VirtualMachineChangePreview"
    assert [c["field"] for c in body["details"]["causes"]] == fields


async def test_another_kind_is_400(srv: RunningServer) -> None:
    reply = await srv.request(
        "POST", PATH, json_body={"kind": "VirtualMachine", "apiVersion": "kubevirt.io/v1"}
    )
    assert reply.status == 400
    assert "VirtualMachineChangePreview" in reply.json()["message"]


async def test_a_vm_in_the_body_with_how_it_runs(srv: RunningServer) -> None:
    inp = _case("instancetype-switch", CASE)
    edited = copy.deepcopy(inp["startVM"])
    edited["spec"]["instancetype"] = {"name": "u1.8xlarge", "kind": "VirtualMachineClusterInstancetype"}
    running = {"virtualMachine": inp["startVM"], "virtualMachineInstance": inp["vmi"]}
    spec = {"virtualMachine": edited, "running": running}
    reply = await srv.request("POST", PATH, json_body=review(**spec))
    assert reply.status == 201, reply.body
    status = reply.json()["status"]
    # The folder's KubeVirt CR (LiveUpdate) applies; the instancetypes are the folder's.
    assert status["verdict"] == "restart"
    assert status["message"] == "CPU sockets updated in template spec to a value higher than what's available"


async def test_the_resource_is_discoverable(srv: RunningServer) -> None:
    doc = (await srv.get("/apis/expand.kubevirt-expand.io/v1")).json()
    found = [r for r in doc["resources"] if r["name"] == "virtualmachinechangepreviews"]
    assert found == [
        {
            "name": "virtualmachinechangepreviews",
            "singularName": "virtualmachinechangepreview",
            "namespaced": True,
            "kind": "VirtualMachineChangePreview",
            "verbs": ["create"],
        }
    ]


async def test_an_edited_vm_with_a_non_live_field_restarts(srv: RunningServer) -> None:
    edited = copy.deepcopy(_case("instancetype-switch", CASE)["startVM"])
    edited["spec"]["template"]["spec"]["hostname"] = "db1"
    reply = await srv.request("POST", PATH, json_body=review(vmName="vm-switch", virtualMachine=edited))
    status = reply.json()["status"]
    assert status["verdict"] == "restart"
    assert status["changes"] == [{"path": "/spec/template/spec/hostname", "new": "db1"}]


async def test_an_upgrade_takes_the_edited_instancetype(tmp_path: Path) -> None:
    running_folder(tmp_path / "cluster", _case("instancetype-switch", CASE), edit_medium=True)
    async with running_server(FolderSource(tmp_path / "cluster", watch=False), tmp_path) as srv:
        kept = (await srv.request("POST", PATH, json_body=review(vmName="vm-switch"))).json()["status"]
        upgraded = (
            await srv.request("POST", PATH, json_body=review(vmName="vm-switch", upgrade=True))
        ).json()
    # The VM keeps the revision it captured until it is upgraded.
    assert (kept["verdict"], kept["changes"]) == ("live", [])
    status = upgraded["status"]
    assert status["verdict"] == "live"
    assert status["changes"] == [
        {"path": "/spec/template/spec/domain/memory/guest", "old": "4Gi", "new": "6Gi"}
    ]
    assert {"path": "/spec/domain/memory/guest", "value": "6Gi"} in status["liveUpdates"]


async def test_a_vmi_naming_a_revision_its_vm_does_not_own_reads_as_no_start_revision(tmp_path: Path) -> None:
    """Issue 37, finding 6: a VMI whose status names a StatefulSet's revision. virt-controller reads a VM's
    start revision only among the revisions the VM owns, so the VM has none: the preview is that of a VM
    without one (the stored VM is the base), and nothing of the StatefulSet's revision is in it."""
    inp = _case("instancetype-switch", CASE)
    target = inp["vm"]["spec"]["instancetype"]
    answers = []
    for folder, start in (("foreign", "web-7d9f"), ("none", "no-such-revision")):
        running_folder(tmp_path / folder, inp, start=start)
        async with running_server(
            FolderSource(tmp_path / folder, watch=False), tmp_path / f"{folder}-srv"
        ) as srv:
            reply = await srv.request("POST", PATH, json_body=review(vmName="vm-switch", instancetype=target))
        assert reply.status == 201, reply.body
        assert b"STS-SECRET" not in reply.body
        answers.append(reply.json()["status"])
    assert answers[0] == answers[1]
    assert answers[0]["verdict"] == "live"
