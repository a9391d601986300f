"""Issue 40 on a cluster, behind the real aggregator: ``kubectl create -f preview.yaml -o yaml`` previews
a catalog change (an instancetype edit) across the fleet, against the server as deployed (its VM cache).

A tenant of ns-a (a ClusterRole to create previews, bound cluster-wide as the resource is of the
cluster scope; ``list virtualmachines`` in ns-a only) sees ns-a's VM and a count of ns-b's; nothing of
ns-b (its name, its VM's name) reaches them; asking for ns-b by name is kube-apiserver's 403 for that
read. The admin sees both.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.realk8s.controlplane import ControlPlane, poll
from tests.realk8s.deployed import DeployedServer

GROUP = "expand.kubevirt-expand.io"
RBAC = "rbac.authorization.k8s.io"
IT_API = "instancetype.kubevirt.io/v1beta1"


@dataclass
class Fleet:
    a: str
    b: str
    instancetype: str
    tenant: str
    secret_vm: str


def instancetype(name: str, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": IT_API,
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": 1}, "memory": {"guest": memory}},
    }


def vm(ns: str, name: str, it: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "running": False,
            "instancetype": {"kind": "VirtualMachineClusterInstancetype", "name": it},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }


@pytest.fixture(scope="module")
def fleet(control_plane: ControlPlane, deployed: DeployedServer) -> Iterator[Fleet]:
    del deployed
    suffix = uuid.uuid4().hex[:8]
    f = Fleet(
        a=control_plane.new_namespace("cc-a"),
        b=control_plane.new_namespace("cc-b"),
        instancetype=f"cc-small-{suffix}",
        tenant=f"tenant-{suffix}",
        secret_vm=f"secret-vm-{suffix}",
    )
    role = f"catalog-previewer-{suffix}"
    control_plane.apply(
        instancetype(f.instancetype, "1Gi"),
        vm(f.a, "vm-a", f.instancetype),
        vm(f.b, f.secret_vm, f.instancetype),
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [{"apiGroups": [GROUP], "resources": ["catalogchangepreviews"], "verbs": ["create"]}],
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": f.tenant}],
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": "vm-lister", "namespace": f.a},
            "rules": [{"apiGroups": ["kubevirt.io"], "resources": ["virtualmachines"], "verbs": ["list"]}],
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "vm-lister", "namespace": f.a},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "vm-lister"},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": f.tenant}],
        },
    )
    poll(
        f"RBAC for {f.tenant} in effect",
        lambda: control_plane.kubectl(
            "auth", "can-i", "create", f"catalogchangepreviews.{GROUP}", f"--as={f.tenant}", check=False
        ).stdout.strip(),
        lambda answer: answer == "yes",
    )
    try:
        yield f
    finally:
        for kind, name in (
            ("virtualmachineclusterinstancetypes.instancetype.kubevirt.io", f.instancetype),
            ("clusterrolebinding", role),
            ("clusterrole", role),
        ):
            control_plane.kubectl("delete", kind, name, "--ignore-not-found", check=False)


def create(cluster: ControlPlane, spec: dict[str, Any], tmp_path: Path, who: str | None) -> tuple[int, str]:
    doc = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "CatalogChangePreview",
        "metadata": {"name": "p"},
        "spec": spec,
    }
    path = tmp_path / "preview.yaml"
    path.write_text(yaml.safe_dump(doc))
    # A cache of its own (kubectl validates against the OpenAPI document it cached); callers who may not
    # list CRDs add --validate=false, as for any create-only resource (docs/http-api.md).
    cache = f"--cache-dir={tmp_path / 'kubectl-cache'}"
    caller = [f"--as={who}", "--validate=false"] if who else []
    done = cluster.kubectl("create", "-f", str(path), "-o", "yaml", *caller, cache, check=False)
    return done.returncode, done.stdout + done.stderr


def edit(f: Fleet, **spec: Any) -> dict[str, Any]:
    return {"objects": [instancetype(f.instancetype, "2Gi")], **spec}


def _answer(cluster: ControlPlane, f: Fleet, tmp_path: Path, who: str | None, want: int) -> dict[str, Any]:
    """The preview once the VM cache holds both VMs (the admin sees ``want`` items)."""

    def read() -> tuple[int, str]:
        return create(cluster, edit(f), tmp_path, who)

    _, out = poll(
        "both VMs in the server's fleet",
        read,
        lambda done: done[0] == 0 and len(yaml.safe_load(done[1])["status"]["items"]) >= want,
        timeout=30,
    )
    return yaml.safe_load(out)["status"]  # type: ignore[no-any-return]


def test_the_admin_previews_an_instancetype_edit_across_namespaces(
    control_plane: ControlPlane, fleet: Fleet, tmp_path: Path
) -> None:
    status = _answer(control_plane, fleet, tmp_path, None, 2)
    assert status["changedObjects"] == [
        {"kind": "VirtualMachineClusterInstancetype", "name": fleet.instancetype, "change": "edited"}
    ]
    assert [(i["namespace"], i["name"], i["verdict"]) for i in status["items"]] == [
        (fleet.a, "vm-a", "stopped"),
        (fleet.b, fleet.secret_vm, "stopped"),
    ]
    assert status["hidden"] == 0
    change = {"path": "/spec/template/spec/domain/memory/guest", "old": "1Gi", "new": "2Gi"}
    assert change in status["items"][0]["changes"]


def test_a_tenant_of_ns_a_sees_only_its_vms_and_a_count_of_the_others(
    control_plane: ControlPlane, fleet: Fleet, tmp_path: Path
) -> None:
    _answer(control_plane, fleet, tmp_path, None, 2)  # the server holds both VMs
    code, out = create(control_plane, edit(fleet), tmp_path, fleet.tenant)
    assert code == 0, out
    status = yaml.safe_load(out)["status"]
    assert [(i["namespace"], i["name"]) for i in status["items"]] == [(fleet.a, "vm-a")]
    assert status["hidden"] == 1 and status["vms"] >= 1
    assert fleet.b not in out and fleet.secret_vm not in out
    assert [n["namespace"] for n in status["namespaces"]] == [fleet.a]


def test_asking_for_a_namespace_the_tenant_may_not_read_is_403(
    control_plane: ControlPlane, fleet: Fleet, tmp_path: Path
) -> None:
    for ns in (fleet.b, f"{fleet.b}-none"):  # existing or not, the same answer
        code, out = create(control_plane, edit(fleet, namespaces=[ns]), tmp_path, fleet.tenant)
        assert code != 0
        assert (
            f'virtualmachines.kubevirt.io is forbidden: User "{fleet.tenant}" cannot list resource '
            f'"virtualmachines" in API group "kubevirt.io" in the namespace "{ns}"'
        ) in out
        assert fleet.secret_vm not in out


def test_a_proposal_that_is_no_instancetype_is_422_naming_the_field(
    control_plane: ControlPlane, fleet: Fleet, tmp_path: Path
) -> None:
    spec = {"objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}
    code, out = create(control_plane, spec, tmp_path, fleet.tenant)
    assert code != 0 and "spec.objects[0].kind" in out and "Unsupported value" in out, out
