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
from tests.realk8s.controlplane import ControlPlane, poll
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


def test_a_namespace_bound_tenant_may_launch_where_it_may_read_its_namespace(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    """Issue 37, finding 7: launch-spec reviewed ``get namespaces`` at the cluster scope, so a tenant
    whose rights are a RoleBinding in its namespace got 403 although kube-apiserver lets it read its own
    Namespace. The read is reviewed as kube-apiserver authorizes ``GET /api/v1/namespaces/NS``
    (namespace NS, name NS), which a RoleBinding in NS grants."""
    tenant = f"tenant-{namespace}"
    rules = [
        {
            "apiGroups": ["subresources.kubevirt.io"],
            "resources": ["virtualmachines/launch-spec"],
            "verbs": ["get"],
        },
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["list"]},
    ]
    rbac = "rbac.authorization.k8s.io"
    control_plane.apply(
        instancetype(namespace, "small", 2),
        vm(namespace, "vm-t", "small", {}),
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "Role",
            "metadata": {"name": "launch", "namespace": namespace},
            "rules": rules,
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "launch", "namespace": namespace},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "launch"},
            "subjects": [{"apiGroup": rbac, "kind": "User", "name": tenant}],
        },
    )
    # kube-apiserver's own reading of the same RBAC: the tenant may get its Namespace.
    poll(
        "the tenant's RoleBinding in effect",
        lambda: (
            control_plane.kubectl(
                "get", "namespace", namespace, f"--as={tenant}", "-o", "name", check=False
            ).returncode
        ),
        lambda code: code == 0,
    )
    path = f"/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/vm-t/launch-spec"
    done = poll(  # the server's reviews of a refusal are kept 10 s: an early one may stand that long
        "launch-spec as the tenant",
        lambda: control_plane.kubectl("get", "--raw", path, f"--as={tenant}", check=False),
        lambda result: result.returncode == 0 or "at the cluster scope" in result.stderr,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["kind"] == "VirtualMachineLaunch" and doc["quota"]["fits"] is True
