"""``apiserver.launch_vm``: the examples' VMs cost what KubeVirt's own code says (the examples family of
the launcher corpus, the pod as virt-controller renders it, here as kube-apiserver then stores it), a
Namespace and ResourceQuota among the objects act as the cluster's, and a VM that does not render raises
the Status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apiserver import ExpandError, expand_vm, launch_vm
from apiserver.documents.manifests import read_manifest_paths
from apiserver.render.kubernetes.quantity import parse_quantity
from tests.support.launcher import stored_pod

REPO = Path(__file__).parents[2]
OBJECTS = [obj for _, obj in read_manifest_paths([str(REPO / "examples")])]
KUBEVIRT = next(o for o in OBJECTS if o["kind"] == "KubeVirt")
VMS = {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == "VirtualMachine"}
ANSWERS = {
    c["name"]: c["answer"]
    for c in map(json.loads, (REPO / "tests/render/launcher/cases/examples.jsonl").read_text().splitlines())
}


@pytest.mark.parametrize("name", sorted(VMS))
def test_the_examples_cost_what_kubevirt_computes(name: str) -> None:
    got = launch_vm(VMS[name], OBJECTS, KUBEVIRT)
    answer = stored_pod(ANSWERS[name])
    assert got["kind"] == "VirtualMachineLaunch"
    for key in ("containers", "initContainers", "total", "memoryOverhead"):
        assert got["pod"][key] == answer[key]


def test_namespace_and_quota_objects_set_the_limits() -> None:
    extra: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "default", "labels": {"alpha.kubevirt.io/auto-memory-limits-ratio": "1.5"}},
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q", "namespace": "default"},
            "spec": {"hard": {"limits.memory": "10Gi"}},
        },
    ]
    got = launch_vm(VMS["fedora"], [*OBJECTS, *extra], KUBEVIRT)
    compute = got["pod"]["containers"][0]["resources"]
    request = parse_quantity(compute["requests"]["memory"]).value
    assert parse_quantity(compute["limits"]["memory"]).value == int(request * 1.5)
    assert not any("ResourceQuota" in a for a in got["assumed"])


def test_a_vm_that_does_not_render_raises_its_status() -> None:
    vm = json.loads(json.dumps(VMS["fedora"]))
    vm["spec"]["instancetype"]["name"] = "absent"
    with pytest.raises(ExpandError) as caught:
        launch_vm(vm, OBJECTS, KUBEVIRT)
    with pytest.raises(ExpandError) as expanding:
        expand_vm(vm, OBJECTS, KUBEVIRT)
    assert caught.value.status == expanding.value.status


def test_the_vmi_is_given_as_the_cluster_stores_it() -> None:
    vm = json.loads(json.dumps(VMS["fedora-cluster"]))
    vm["metadata"].update(uid="0b3c3d3e-1111-4222-8333-444455556666", generation=3)
    got = launch_vm(vm, OBJECTS, KUBEVIRT)
    vmi = got["vmi"]
    annotations = vmi["metadata"]["annotations"]
    # the VM controller's (ApplyToVMI names the instancetype and preference) and the VMI controller's
    assert annotations["kubevirt.io/cluster-instancetype-name"] == "cmedium"
    assert annotations["kubevirt.io/cluster-preference-name"] == "fedora"
    assert annotations["kubevirt.io/latest-observed-api-version"] == "v1"
    assert annotations["kubevirt.io/storage-observed-api-version"] == "v1"
    assert vmi["metadata"]["finalizers"] == [
        "kubevirt.io/virtualMachineControllerFinalize",
        "kubevirt.io/foregroundDeleteVirtualMachine",
    ]
    # virt-api's generated defaults
    assert vmi["spec"]["domain"]["features"]["acpi"] == {"enabled": True}
    assert all(d.get("disk", {}).get("bus") for d in vmi["spec"]["domain"]["devices"]["disks"])
    status = vmi["status"]
    assert status["virtualMachineRevisionName"] == "revision-start-vm-0b3c3d3e-1111-4222-8333-444455556666-3"
    assert status["phase"] == "Scheduling"
    assert status["qosClass"] == "Burstable"
    assert status["memory"]["memoryOverhead"] == got["pod"]["memoryOverhead"]
    assert status["guestOSInfo"] == {}


def test_a_vm_with_dedicated_cpus_has_a_guaranteed_pod() -> None:
    vm: dict[str, Any] = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "pinned", "namespace": "default"},
        "spec": {
            "runStrategy": "Always",
            "template": {
                "spec": {
                    "domain": {
                        "cpu": {"cores": 2, "dedicatedCpuPlacement": True},
                        "memory": {"guest": "2Gi"},
                        "devices": {},
                    }
                }
            },
        },
    }
    got = launch_vm(vm, [], None)
    assert got["vmi"]["status"]["qosClass"] == "Guaranteed"
    # not stored yet: no uid, as KubeVirt's getVMRevisionName would name it
    assert got["vmi"]["status"]["virtualMachineRevisionName"] == "revision-start-vm--0"
    vm["spec"]["template"]["spec"]["domain"]["cpu"] = {"cores": 2}
    assert launch_vm(vm, [], None)["vmi"]["status"]["qosClass"] == "Burstable"


def test_the_input_the_vm_controller_attaches_takes_the_preferred_bus() -> None:
    preference = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachinePreference",
        "metadata": {"name": "tablet-on-virtio", "namespace": "default"},
        "spec": {"devices": {"preferredAutoattachInputDevice": True, "preferredInputBus": "virtio"}},
    }
    vm: dict[str, Any] = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "tablet", "namespace": "default"},
        "spec": {
            "runStrategy": "Always",
            "preference": {"kind": "VirtualMachinePreference", "name": "tablet-on-virtio"},
            "template": {"spec": {"domain": {"memory": {"guest": "1Gi"}, "devices": {}}}},
        },
    }
    # the expansion has no input yet; startVMI attaches default-0, ApplyToVMI gives it the bus, the
    # webhook its type
    assert "inputs" not in expand_vm(vm, [preference])["spec"]["template"]["spec"]["domain"]["devices"]
    got = launch_vm(vm, [preference])
    assert got["vmi"]["spec"]["domain"]["devices"]["inputs"] == [
        {"name": "default-0", "bus": "virtio", "type": "tablet"}
    ]
