"""The virt-launcher pod's ``total.limits`` follows Kubernetes' rule: a CPU or memory limit only where every
container and init container declares one (kubelet bounds the pod's cgroup so, ``ResourceConfigForPod``);
then ``PodLimits``' figure (the containers and the running init containers summed, the others' largest).
The same in launch-spec (``apiserver.launch_vm``) and ``kubevirt-expand resources``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from apiserver import launch_vm
from apiserver.cli import main

DEVICES = {
    "devices.kubevirt.io/kvm": "1",
    "devices.kubevirt.io/tun": "1",
    "devices.kubevirt.io/vhost-net": "1",
}

# A container disk: an init container (volumeroot, 10m/40M limits) and the guest console log sidecar
# (a restartable init container, 15m/60M limits) beside the compute container.
VM: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "cd", "namespace": "default"},
    "spec": {
        "runStrategy": "Halted",
        "template": {
            "spec": {
                "domain": {
                    "devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}]},
                    "memory": {"guest": "1Gi"},
                },
                "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:40"}}],
            }
        },
    },
}


def limited_vm() -> dict[str, Any]:
    vm = copy.deepcopy(VM)
    domain = vm["spec"]["template"]["spec"]["domain"]
    del domain["memory"]
    domain["resources"] = {
        "requests": {"cpu": "2", "memory": "2Gi"},
        "limits": {"cpu": "2", "memory": "2Gi"},
    }
    return vm


def test_a_compute_container_without_limits_leaves_the_pod_without_cpu_or_memory_limit() -> None:
    pod = launch_vm(VM, [])["pod"]
    limits = {c["name"]: c["resources"].get("limits", {}) for c in pod["containers"] + pod["initContainers"]}
    assert "cpu" not in limits["compute"] and limits["guest-console-log"] == {"cpu": "15m", "memory": "60M"}
    # not the sidecar's and init container's limits, as the sum of the limits set would give
    assert pod["total"]["limits"] == DEVICES


def test_limits_everywhere_give_the_pods_limit() -> None:
    pod = launch_vm(limited_vm(), [])["pod"]
    # compute 2 + the running sidecar's 15m (its 10m init container runs before, alone)
    assert pod["total"]["limits"] == {**DEVICES, "cpu": "2015m", "memory": "2626914048"}  # 2448Mi + 60M


def test_resources_says_the_same(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(VM))
    (tmp_path / "b.json").write_text(json.dumps({**limited_vm(), "metadata": {"name": "limited"}}))
    assert main(["resources", "-f", str(tmp_path), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    vms = {v["name"]: v for v in doc["vms"]}
    assert vms["cd"]["pod"]["total"]["limits"] == DEVICES
    assert vms["limited"]["pod"]["total"]["limits"]["memory"] == "2626914048"
    (namespace,) = doc["namespaces"]
    # one pod without a CPU or memory limit: the namespace's total has none either
    assert namespace["limits"] == {k: str(2 * int(v)) for k, v in DEVICES.items()}
    assert namespace["limited"] == {"cpu": False, "memory": False}
    assert main(["resources", "-f", str(tmp_path)]) == 0
    rows = {line.split()[1]: line.split() for line in capsys.readouterr().out.splitlines()[1:3]}
    assert rows["cd"][4:6] == ["none", "none"]
    assert rows["limited"][4:6] == ["2015m", "2506Mi"]
