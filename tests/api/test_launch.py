"""``apiserver.launch_vm``: the examples' VMs cost what KubeVirt's own code says (the examples family of
the launcher corpus, the pod as virt-controller renders it, here as kube-apiserver then stores it), a
Namespace and ResourceQuota among the objects act as the cluster's, and a VM that does not render raises
the Status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apiserver import ExpandError, ExpandWarning, expand_vm, launch_vm, launch_vmi
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


# Figures below are expand-launcher's (KubeVirt d923fdb) answers for the same inputs, as kube-apiserver
# stores the pod: SetDefaults_Pod copies the compute container's device limits (KVM, and the pod
# network's tun and vhost-net) into its requests, which ask for none of them.
DEVICES = {
    "devices.kubevirt.io/kvm": "1",
    "devices.kubevirt.io/tun": "1",
    "devices.kubevirt.io/vhost-net": "1",
}
ONE_GI = {"cpu": "105m", "ephemeral-storage": "50M", "memory": "1410731712", **DEVICES}
GATE = "ExternalNetResourceInjection"


def _vm(tspec_extra: dict[str, Any], devices: dict[str, Any]) -> dict[str, Any]:
    domain = {"cpu": {"cores": 1}, "memory": {"guest": "1Gi"}, "devices": devices}
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": {"runStrategy": "Always", "template": {"spec": {"domain": domain, **tspec_extra}}},
    }


MULTUS_VM = _vm(
    {"networks": [{"name": "default", "pod": {}}, {"name": "sec", "multus": {"networkName": "nad0"}}]},
    {"interfaces": [{"name": "default", "masquerade": {}}, {"name": "sec", "bridge": {}}]},
)
NAD = {
    "apiVersion": "k8s.cni.cncf.io/v1",
    "kind": "NetworkAttachmentDefinition",
    "metadata": {"name": "nad0", "annotations": {"k8s.v1.cni.cncf.io/resourceName": "intel.com/sriov"}},
}
GATE_OFF = {"developerConfiguration": {"disabledFeatureGates": [GATE]}}


def test_with_the_gate_disabled_the_nads_resource_is_requested() -> None:
    got = launch_vm(MULTUS_VM, [NAD], GATE_OFF)
    assert got["pod"]["total"]["requests"] == {**ONE_GI, "intel.com/sriov": "1"}
    assert got["pod"]["total"]["limits"]["intel.com/sriov"] == "1"


@pytest.mark.parametrize("kubevirt", [None, {"developerConfiguration": {"featureGates": [GATE]}}])
def test_with_the_gate_on_no_nad_is_read(kubevirt: dict[str, Any] | None) -> None:
    """ExternalNetResourceInjection is Beta at d923fdb: on unless disabled, and then virt-controller never
    reads a NAD: one given changes nothing, none given refuses nothing."""
    assert launch_vm(MULTUS_VM, [NAD], kubevirt)["pod"]["total"]["requests"] == ONE_GI
    assert launch_vm(MULTUS_VM, [], kubevirt)["pod"]["total"]["requests"] == ONE_GI


def test_with_the_gate_disabled_a_missing_nad_refuses_the_pod() -> None:
    with pytest.raises(ExpandError) as caught:
        launch_vm(MULTUS_VM, [], GATE_OFF)
    assert caught.value.status["code"] == 422
    assert caught.value.message == (
        "virt-controller would not create the virt-launcher pod: "
        "failed to locate network attachment definition default/nad0"
    )


def _pvc(name: str, namespace: str | None = None, mode: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": {"volumeMode": mode} if mode else {},
    }


def _disk_vm(source: dict[str, Any]) -> dict[str, Any]:
    return _vm({"volumes": [{"name": "d", **source}]}, {"disks": [{"name": "d", "disk": {}}]})


PVC_VM = _disk_vm({"persistentVolumeClaim": {"claimName": "pvc4"}})


@pytest.mark.parametrize(
    "source",
    [
        {"persistentVolumeClaim": {"claimName": "pvc4"}},
        {"dataVolume": {"name": "pvc4"}},
        {"ephemeral": {"persistentVolumeClaim": {"claimName": "pvc4"}}},
    ],
)
def test_a_volume_whose_claim_is_missing_gets_no_pod(source: dict[str, Any]) -> None:
    for objects in ([], [_pvc("pvc4", "elsewhere")]):
        with pytest.raises(ExpandError) as caught:
            launch_vm(_disk_vm(source), objects)
        assert caught.value.status["code"] == 422
        assert (
            caught.value.message
            == "virt-controller would not create the virt-launcher pod: didn't find PVC pvc4"
        )


@pytest.mark.parametrize("mode", [None, "Filesystem", "Block"])
def test_a_claim_among_the_objects_is_found(mode: str | None) -> None:
    got = launch_vm(PVC_VM, [_pvc("pvc4", mode=mode)])
    assert got["pod"]["total"]["requests"] == ONE_GI
    assert not any("PVC" in a for a in got["assumed"])


def test_a_hotplugged_claim_is_not_needed() -> None:
    vm = _disk_vm({"persistentVolumeClaim": {"claimName": "pvc4", "hotpluggable": True}})
    assert launch_vm(vm, [])["pod"]["total"]["requests"] == ONE_GI


def test_assume_pvcs_takes_a_missing_claim_as_existing_and_says_so() -> None:
    got = launch_vm(PVC_VM, [], assume_pvcs=True)
    assert got["pod"]["total"]["requests"] == ONE_GI
    assert (
        "PVC default/pvc4 (volume d) is not among the inputs: taken as an existing claim of volumeMode "
        "Filesystem" in got["assumed"]
    )


LONE_VMI = {
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


def test_a_vmi_costs_what_kubevirt_computes() -> None:
    """The VMI webhook gives a VMI without networks the pod network (the default binding, bridge: tun and
    vhost-net), as the VM controller does for a VM's."""
    got = launch_vmi(LONE_VMI, [_pvc("data", mode="Block")])
    assert got["kind"] == "VirtualMachineLaunch"
    assert got["metadata"] == {"name": "lone", "namespace": "default"}
    assert got["pod"]["memoryOverhead"] == "296Mi"
    assert got["pod"]["total"] == {
        "requests": {"cpu": "205m", "ephemeral-storage": "50M", "memory": "2492862144", **DEVICES},
        # The compute container sets no CPU or memory limit: the pod has none (not the init container's
        # 15m and 60M, which PodLimits' sum alone would give).
        "limits": DEVICES,
    }
    assert got["vmi"]["spec"]["networks"] == [{"name": "default", "pod": {}}]
    # stored once virt-controller has created its pod, as a VM's VMI is
    assert got["vmi"]["status"]["phase"] == "Scheduling"
    with pytest.raises(ExpandError, match="didn't find PVC data"):
        launch_vmi(LONE_VMI)
    assert launch_vmi(LONE_VMI, assume_pvcs=True)["pod"]["total"] == got["pod"]["total"]


def test_a_vmi_no_vm_owns_is_given_as_the_cluster_stores_it() -> None:
    """virt-api's webhook and virt-controller's VMI controller write a user's VMI as they write a VM's;
    the VM controller's part (revision name, instancetype annotations, its finalizer) is not there."""
    vmi = launch_vmi(LONE_VMI, [_pvc("data")])["vmi"]
    assert vmi["metadata"]["annotations"] == {
        "kubevirt.io/pci-topology-version": "v3",
        "kubevirt.io/latest-observed-api-version": "v1",
        "kubevirt.io/storage-observed-api-version": "v1",
    }
    assert vmi["metadata"]["finalizers"] == ["kubevirt.io/foregroundDeleteVirtualMachine"]
    assert vmi["spec"]["domain"]["features"]["acpi"] == {"enabled": True}
    assert vmi["spec"]["domain"]["devices"]["disks"] == [{"name": "d", "disk": {"bus": "sata"}}]
    status = vmi["status"]
    assert "virtualMachineRevisionName" not in status
    assert status["phase"] == "Scheduling"
    assert status["qosClass"] == "Burstable"
    assert status["memory"]["memoryOverhead"] == "296Mi"
    assert status["guestOSInfo"] == {}


def test_launch_vmi_refuses_what_is_not_a_vmi() -> None:
    with pytest.raises(ExpandError) as caught:
        launch_vmi(VMS["fedora"], OBJECTS)
    assert caught.value.status["code"] == 400
    assert (
        "expected a VirtualMachineInstance, got kind 'VirtualMachine': call launch_vm" in caught.value.message
    )
    with pytest.raises(ExpandError) as caught:
        launch_vmi([])  # type: ignore[arg-type]
    assert caught.value.status["code"] == 400
    nameless = {**LONE_VMI, "metadata": {}}
    with pytest.raises(ExpandError) as caught:
        launch_vmi(nameless, assume_pvcs=True)
    assert caught.value.status["code"] == 422
    assert caught.value.status["details"]["causes"][0]["field"] == "metadata.name"
    wrong = {**LONE_VMI, "spec": {**LONE_VMI["spec"], "domain": {"cpu": {"cores": "two"}}}}
    with pytest.raises(ExpandError) as caught:
        launch_vmi(wrong)
    assert caught.value.status["code"] == 422
    assert caught.value.status["details"]["causes"][0]["field"] == "spec.domain.cpu.cores"


def test_launch_vmi_applies_the_namespaces_presets_on_request() -> None:
    preset = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstancePreset",
        "metadata": {"name": "big", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"size": "big"}},
            "domain": {"resources": {"requests": {"memory": "4Gi"}}},
        },
    }
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "p", "labels": {"size": "big"}},
        "spec": {"domain": {"devices": {}}},
    }
    with pytest.warns(ExpandWarning, match="VirtualMachineInstancePresets is now deprecated"):
        got = launch_vmi(vmi, [preset], presets=True)
    assert got["vmi"]["spec"]["domain"]["resources"]["requests"]["memory"] == "4Gi"
    assert got["vmi"]["metadata"]["annotations"]["virtualmachinepreset.kubevirt.io/big"] == "kubevirt.io/v1"
    assert (
        launch_vmi(vmi, [preset])["vmi"]["spec"]["domain"]
        .get("resources", {})
        .get("requests", {})
        .get("memory")
        != "4Gi"
    )


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
