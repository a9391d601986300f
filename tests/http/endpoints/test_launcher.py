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
