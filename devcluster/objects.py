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
