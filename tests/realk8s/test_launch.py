"""launch-spec through the real aggregator: the server reads the VM's Namespace and its ResourceQuotas
from kube-apiserver (its own rights; the caller's reviewed), sets the limits KubeVirt's
AutoResourceLimits would, and says whether the pod fits the namespace's quotas and by how much it does
not; the same as ``apiserver.launch_vm`` with the same objects (whose numbers the launcher corpus holds
to KubeVirt's own)."""

from __future__ import annotations

import json
from typing import Any

from apiserver import launch_vm
from apiserver.render.kubernetes.quantity import parse_quantity
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_collection import instancetype, vm


def launch_spec(cluster: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    path = f"/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}/launch-spec"
    return json.loads(cluster.kubectl("get", "--raw", path).stdout)  # type: ignore[no-any-return]


def test_launch_spec_reads_the_namespace_and_its_quota(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    small, machine = instancetype(namespace, "small", 2), vm(namespace, "vm-q", "small", {})
    control_plane.apply(small, machine)
    before = launch_spec(control_plane, namespace, "vm-q")
    assert before["quota"] == {"fits": True, "refusedBy": []}
    assert "memory" not in before["pod"]["containers"][0]["resources"].get("limits", {})
    requested = parse_quantity(before["pod"]["total"]["requests"]["memory"]).value

    control_plane.kubectl("label", "namespace", namespace, "alpha.kubevirt.io/auto-memory-limits-ratio=1.5")
    # room for less than this pod's memory request
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "team", "namespace": namespace},
        "spec": {"hard": {"limits.memory": "100Gi", "requests.memory": str(requested - 1)}},
    }
    control_plane.apply(quota)
    after = launch_spec(control_plane, namespace, "vm-q")
    compute = after["pod"]["containers"][0]["resources"]
    request = parse_quantity(compute["requests"]["memory"]).value
    # AutoResourceLimits with the namespace's ratio
    assert parse_quantity(compute["limits"]["memory"]).value == int(request * 1.5)
    assert after["quota"]["fits"] is False
    (reason,) = after["quota"]["refusedBy"]
    assert reason.startswith("exceeded quota: team, requested: requests.memory=")
    assert reason.endswith(f"limited: requests.memory={requested - 1}")

    ns = json.loads(control_plane.kubectl("get", "namespace", namespace, "-o", "json").stdout)
    offline = launch_vm(machine, [small, ns, quota])
    assert after["pod"] == offline["pod"]
