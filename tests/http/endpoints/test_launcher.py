"""GET launch-spec and PUT launch-vm-spec on the examples folder: the VMI and the virt-launcher pod's
resources, equal to KubeVirt's own (the examples family of the launcher corpus, from expand-launcher);
the namespace's labels and ResourceQuotas read from the folder; Statuses for what cannot be answered."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.documents.manifests import read_manifest_paths
from apiserver.render.kubernetes.quantity import parse_quantity
from apiserver.sources.folder import FolderSource
from tests.support.http_helpers import EXAMPLES, RunningServer, examples_server, running_server
from tests.support.launcher import stored_pod

OBJECTS = [obj for _, obj in read_manifest_paths([str(EXAMPLES)])]
VMS = {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == "VirtualMachine"}
CASES = Path(__file__).parents[2] / "render" / "launcher" / "cases" / "examples.jsonl"
# KubeVirt's answers for the examples, the pod as kube-apiserver stores it
KUBEVIRT_ANSWERS = {
    c["name"]: stored_pod(c["answer"]) for c in map(json.loads, CASES.read_text().splitlines())
}
BASE = "/apis/subresources.kubevirt.io/v1/namespaces"


def get_path(name: str, namespace: str = "default") -> str:
    return f"{BASE}/{namespace}/virtualmachines/{name}/launch-spec"


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with examples_server(tmp_path) as running:
        yield running


def _pod_as_kubevirt_gives_it(pod: dict[str, Any]) -> dict[str, Any]:
    return {k: pod[k] for k in ("containers", "initContainers", "total", "memoryOverhead")}


@pytest.mark.parametrize("name", sorted(VMS))
async def test_get_gives_kubevirts_pod_resources(srv: RunningServer, name: str) -> None:
    reply = await srv.get(get_path(name))
    assert reply.status == 200, reply.body
    doc = reply.json()
    assert doc["kind"] == "VirtualMachineLaunch" and doc["metadata"] == {"name": name, "namespace": "default"}
    answer = KUBEVIRT_ANSWERS[name]
    assert _pod_as_kubevirt_gives_it(doc["pod"]) == {
        k: answer[k] for k in ("containers", "initContainers", "total", "memoryOverhead")
    }
    assert doc["vmi"]["kind"] == "VirtualMachineInstance"
    assert doc["vmi"]["spec"]["domain"]["cpu"] == answer["vmi"]["spec.domain.cpu"]
    # the overhead's parts add up to it
    parts = sum(parse_quantity(p["memory"]).value for p in doc["pod"]["memoryOverheadParts"])
    assert parts == parse_quantity(doc["pod"]["memoryOverhead"]).value
    assert any("no ResourceQuota" in a for a in doc["assumed"])


async def test_put_answers_as_get_and_yaml(srv: RunningServer) -> None:
    vm = copy.deepcopy(VMS["fedora"])
    del vm["metadata"]["namespace"]
    put = await srv.put(f"{BASE}/default/launch-vm-spec", json_body=vm)
    assert put.status == 200, put.body
    assert put.json()["pod"] == (await srv.get(get_path("fedora"))).json()["pod"]
    as_yaml = await srv.get(get_path("fedora"), headers={"Accept": "application/yaml"})
    assert yaml.safe_load(as_yaml.body)["pod"] == put.json()["pod"]


async def test_namespace_quota_and_labels_from_the_folder_set_memory_limits(
    srv: RunningServer, tmp_path: Path
) -> None:
    before = (await srv.get(get_path("fedora"))).json()
    assert "memory" not in before["pod"]["containers"][0]["resources"].get("limits", {})
    folder = tmp_path / "with-quota"
    shutil.copytree(EXAMPLES, folder)
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "default", "labels": {"alpha.kubevirt.io/auto-memory-limits-ratio": "3"}},
    }
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "mem", "namespace": "default"},
        "spec": {"hard": {"limits.memory": "100Gi"}},
    }
    (folder / "quota.yaml").write_text(yaml.safe_dump_all([namespace, quota]))
    async with running_server(FolderSource(folder, watch=False), tmp_path / "srv") as quoted:
        after = (await quoted.get(get_path("fedora"))).json()
    assert not any("ResourceQuota" in a for a in after["assumed"]), after["assumed"]
    compute = after["pod"]["containers"][0]["resources"]
    assert compute["requests"] == before["pod"]["containers"][0]["resources"]["requests"]
    # AutoResourceLimits: the namespace's ratio times the request
    request = parse_quantity(compute["requests"]["memory"]).value
    assert parse_quantity(compute["limits"]["memory"]).value == int(request * 3)


async def test_statuses(srv: RunningServer) -> None:
    missing = await srv.get(get_path("absent"))
    assert missing.status == 404 and missing.json()["reason"] == "NotFound"
    bad_arch = await srv.get(get_path("fedora") + "?arch=riscv64")
    assert bad_arch.status == 400 and "arch" in bad_arch.json()["message"]
    vm = copy.deepcopy(VMS["fedora"])
    vm["spec"]["instancetype"]["name"] = "nope"
    unrenderable = await srv.put(f"{BASE}/default/launch-vm-spec", json_body=vm)
    expanded = await srv.put(f"{BASE}/default/expand-vm-spec", json_body=vm)
    # the VM does not render: the same Status expand-vm-spec answers
    assert (unrenderable.status, unrenderable.json()) == (expanded.status, expanded.json())
    assert unrenderable.json()["kind"] == "Status" and unrenderable.status >= 400


# PUT launch-vmi-spec and the claims the volumes name. Figures are expand-launcher's (KubeVirt d923fdb).
LONE_VMI: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachineInstance",
    "metadata": {"name": "lone"},
    "spec": {
        "domain": {
            "cpu": {"cores": 2},
            "memory": {"guest": "2Gi"},
            "devices": {"disks": [{"name": "d", "disk": {}}]},
        },
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
    },
}
# expand-launcher's totals for LONE_VMI, as kube-apiserver stores the pod (the device limits requested too)
LONE_DEVICES = {
    "devices.kubevirt.io/kvm": "1",
    "devices.kubevirt.io/tun": "1",
    "devices.kubevirt.io/vhost-net": "1",
}
LONE_TOTAL = {
    "requests": {"cpu": "205m", "ephemeral-storage": "50M", "memory": "2492862144", **LONE_DEVICES},
    # no CPU or memory limit: the compute container sets none (the sidecar's 15m and 60M are no pod limit)
    "limits": LONE_DEVICES,
}
NO_PVC = "virt-controller would not create the virt-launcher pod: didn't find PVC data"


async def test_put_vmi_without_its_claim_is_kubevirts_refusal_unless_assumed(srv: RunningServer) -> None:
    refused = await srv.put(f"{BASE}/default/launch-vmi-spec", json_body=LONE_VMI)
    assert refused.status == 422, refused.body
    assert refused.json()["kind"] == "Status" and refused.json()["message"] == NO_PVC
    assumed = await srv.put(f"{BASE}/default/launch-vmi-spec?assumePVCs=true", json_body=LONE_VMI)
    assert assumed.status == 200, assumed.body
    doc = assumed.json()
    assert doc["kind"] == "VirtualMachineLaunch" and doc["metadata"] == {
        "name": "lone",
        "namespace": "default",
    }
    assert doc["pod"]["total"] == LONE_TOTAL and doc["pod"]["memoryOverhead"] == "296Mi"
    assert any("PVC default/data (volume d) is not among the inputs" in a for a in doc["assumed"])
    assert doc["quota"] == {"fits": True, "refusedBy": []}


async def test_put_vmi_finds_its_claim_in_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "with-pvc"
    shutil.copytree(EXAMPLES, folder)
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {"volumeMode": "Block", "accessModes": ["ReadWriteOnce"]},
    }
    (folder / "pvc.yaml").write_text(yaml.safe_dump(pvc))
    async with running_server(FolderSource(folder, watch=False), tmp_path / "srv") as running:
        reply = await running.put(
            f"{BASE}/default/launch-vmi-spec",
            data=yaml.safe_dump(LONE_VMI).encode(),
            headers={"Content-Type": "application/yaml"},
        )
        assert reply.status == 200, reply.body
        assert reply.json()["pod"]["total"] == LONE_TOTAL
        assert not any("PVC" in a for a in reply.json()["assumed"])
        # a VM's volume is looked up the same way
        vm = copy.deepcopy(VMS["fedora"])
        vm["spec"]["template"]["spec"]["volumes"] = [
            {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}
        ]
        assert (await running.put(f"{BASE}/default/launch-vm-spec", json_body=vm)).status == 200
        vm["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = "gone"
        gone = await running.put(f"{BASE}/default/launch-vm-spec", json_body=vm)
        assert gone.status == 422 and gone.json()["message"].endswith("didn't find PVC gone")


async def test_put_vmi_statuses(srv: RunningServer) -> None:
    as_vm = await srv.put(f"{BASE}/default/launch-vmi-spec", json_body=VMS["fedora"])
    assert as_vm.status == 400 and "PUT launch-vm-spec renders a VirtualMachine" in as_vm.json()["message"]
    not_object = await srv.put(f"{BASE}/default/launch-vmi-spec", json_body=[1])
    assert not_object.status == 400 and not_object.json()["kind"] == "Status"
    elsewhere = copy.deepcopy(LONE_VMI)
    elsewhere["metadata"]["namespace"] = "other"
    moved = await srv.put(f"{BASE}/default/launch-vmi-spec", json_body=elsewhere)
    assert moved.status == 422 and moved.json()["details"]["causes"][0]["field"] == "metadata.namespace"
    wrong = copy.deepcopy(LONE_VMI)
    wrong["spec"]["domain"]["cpu"]["cores"] = "two"
    typed = await srv.put(f"{BASE}/default/launch-vmi-spec?assumePVCs=true", json_body=wrong)
    assert typed.status == 422 and typed.json()["details"]["causes"][0]["field"] == "spec.domain.cpu.cores"
    bad_arch = await srv.put(f"{BASE}/default/launch-vmi-spec?arch=riscv64", json_body=LONE_VMI)
    assert bad_arch.status == 400 and "arch" in bad_arch.json()["message"]


async def test_launch_vmi_spec_is_in_the_openapi_documents(srv: RunningServer) -> None:
    path = f"{BASE}/{{namespace}}/launch-vmi-spec"
    v2 = (await srv.get("/openapi/v2")).json()
    op = v2["paths"][path]["put"]
    assert op["parameters"][0]["schema"] == {
        "$ref": "#/definitions/io.kubevirt-expand.expand.v1.VirtualMachineInstance"
    }
    assert op["responses"]["200"]["schema"] == {
        "$ref": "#/definitions/io.kubevirt-expand.expand.v1.VirtualMachineLaunch"
    }
    assert any(p["name"] == "assumePVCs" for p in op["parameters"])
