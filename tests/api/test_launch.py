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
