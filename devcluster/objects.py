"""The smallest stored VM worth expanding: tests and benchmarks against a real control plane apply it to
have a VM whose answer needs an instancetype read."""

from __future__ import annotations

from typing import Any


def small_vm(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The namespaced instancetype ``small`` (2 vCPUs, 1Gi) and the VM ``vm1`` that uses it."""
    instancetype = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "small", "namespace": namespace},
        "spec": {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}},
    }
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm1", "namespace": namespace},
        "spec": {
            "instancetype": {"kind": "VirtualMachineInstancetype", "name": "small"},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }
    return instancetype, vm


def large_vm(namespace: str, disks: int) -> dict[str, Any]:
    """``vm1`` of :func:`small_vm` with ``disks`` container disks and as many interfaces, and labels: a
    few milliseconds of rendering at 32 disks, where ``vm1`` takes well under one (CPU fairness' tests
    and benchmark put many at once)."""
    _instancetype, vm = small_vm(namespace)
    template = vm["spec"]["template"]
    template["metadata"] = {"labels": {f"app.example.com/label-{n}": f"value-{n}" for n in range(20)}}
    spec = template["spec"]
    spec["domain"]["devices"] = {
        "disks": [{"name": f"disk{n}", "disk": {"bus": "virtio"}} for n in range(disks)],
        "interfaces": [{"name": f"net{n}", "bridge": {}} for n in range(disks)],
    }
    spec["volumes"] = [
        {"name": f"disk{n}", "containerDisk": {"image": f"quay.io/containerdisks/fedora:{n}"}}
        for n in range(disks)
    ]
    spec["networks"] = [{"name": "net0", "pod": {}}] + [
        {"name": f"net{n}", "multus": {"networkName": f"net-{n}"}} for n in range(1, disks)
    ]
    return vm
