"""apiserver/sources/cluster/cache.py: what the watch caches keep, and which KubeVirt CR is in charge."""

from __future__ import annotations

import copy
from typing import Any

from apiserver.sources.cluster import kinds
from apiserver.sources.cluster.cache import deployed, slim, stored

IT_API = "instancetype.kubevirt.io/v1beta1"


def cr(name: str, phase: str | None = None, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "kubevirt"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-28T00:00:00Z"
    out: dict[str, Any] = {"apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "metadata": meta}
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


def test_virt_api_reads_only_a_cr_with_a_phase() -> None:
    # GetConfigFromKubeVirtCR: a CR virt-operator has not seen (no phase) configures nothing
    assert deployed([cr("a"), cr("b", "")]) is None
    assert deployed([cr("a"), cr("b", "Deploying")]) == cr("b", "Deploying")


def test_a_cr_being_deleted_is_not_read() -> None:
    assert deployed([cr("a", "Deployed", deleting=True)]) is None
    assert deployed([cr("a", "Deployed", deleting=True), cr("b", "Deploying")]) == cr("b", "Deploying")


def test_the_deployed_cr_before_others_then_by_name() -> None:
    assert deployed([cr("b", "Deploying"), cr("c", "Deployed"), cr("a", "Deleting")]) == cr("c", "Deployed")
    assert deployed([cr("b", "Deploying"), cr("a", "Deleting")]) == cr("a", "Deleting")
    assert deployed([]) is None


def test_slim_keeps_what_rendering_reads_and_shares_repeats() -> None:

    def full(name: str, flag: Any) -> dict[str, Any]:
        return {
            "apiVersion": IT_API,
            "kind": "VirtualMachinePreference",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"uid-{name}",
                "resourceVersion": "7",
                "generation": 1,
                "labels": {"vendor": "example"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
                "managedFields": [{"manager": "kubectl"}],
                "creationTimestamp": "2024-01-01T00:00:00Z",
            },
            "spec": {"devices": {"preferredDiskBus": "virtio"}, "features": {"preferredSmm": flag}},
            "status": {"anything": True},
        }

    a = slim(full("a", True), kinds.PREFERENCE)
    b = slim(full("b", True), kinds.PREFERENCE)
    c = slim(full("c", 1), kinds.PREFERENCE)
    assert a == {
        "apiVersion": IT_API,
        "kind": "VirtualMachinePreference",
        "metadata": {
            "name": "a",
            "namespace": "default",
            "uid": "uid-a",
            "resourceVersion": "7",
            "generation": 1,
            "labels": {"vendor": "example"},
        },
        "spec": {"devices": {"preferredDiskBus": "virtio"}, "features": {"preferredSmm": True}},
    }
    assert slim(copy.deepcopy(a), kinds.PREFERENCE) == a  # idempotent
    assert a["spec"] is b["spec"] and a["metadata"]["labels"] is b["metadata"]["labels"]
    assert c["spec"]["features"]["preferredSmm"] == 1 and c["spec"]["features"]["preferredSmm"] is not True
    assert c["spec"]["devices"] is a["spec"]["devices"]
    # VirtualMachines are served back as virt-api reads them: whole, managedFields included (issue 29).
    vm_obj = {**full("v", True), "kind": "VirtualMachine", "apiVersion": "kubevirt.io/v1"}
    assert slim(copy.deepcopy(vm_obj), kinds.VIRTUAL_MACHINE) == vm_obj
    # Other objects kept whole are only read by the rendering: no managedFields.
    pvc = {**full("p", True), "kind": "PersistentVolumeClaim", "apiVersion": "v1"}
    kept = slim(copy.deepcopy(pvc), kinds.PVC)
    assert "managedFields" not in kept["metadata"] and kept["status"] and kept["metadata"]["annotations"]
    # A revision keeps its owners (a VM's start revision is used only when that VM owns it), nothing else.
    owner = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "name": "v",
        "uid": "u1",
        "controller": True,
    }
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": "r",
            "namespace": "default",
            "ownerReferences": [owner],
            "annotations": {"a": "b"},
        },
        "data": {"spec": {}},
        "revision": 2,
    }
    kept = slim(copy.deepcopy(revision), kinds.CONTROLLER_REVISION)
    assert kept["metadata"] == {"name": "r", "namespace": "default", "ownerReferences": [owner]}


def test_cached_vms_share_what_they_have_alike() -> None:

    def vm(name: str, cores: Any) -> dict[str, Any]:
        return {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"uid-{name}",
                "managedFields": [{"manager": name}],
            },
            "spec": {
                "instancetype": {"kind": "VirtualMachineClusterInstancetype", "name": "u1.small"},
                "template": {"spec": {"domain": {"cpu": {"cores": cores}, "devices": {}}}},
            },
        }

    a, b, c = (stored(vm(n, cores), kinds.VIRTUAL_MACHINE) for n, cores in (("a", 2), ("b", 2), ("c", 2.0)))
    assert a == vm("a", 2)  # the same JSON value
    assert a["spec"]["instancetype"] is b["spec"]["instancetype"]
    assert a["spec"]["template"] is b["spec"]["template"]
    assert a["metadata"] is not b["metadata"]
    # 2 and 2.0 encode apart: not shared (the rendering would print 2.0 for the VM that said 2).
    assert c["spec"]["template"] is not a["spec"]["template"]
    assert isinstance(c["spec"]["template"]["spec"]["domain"]["cpu"]["cores"], float)
    assert c["spec"]["instancetype"] is a["spec"]["instancetype"]
