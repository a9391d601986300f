"""Who may expand, decided by the real cluster: kube-apiserver's RBAC before it proxies, and our server's
TokenReview / SubjectAccessReview / certificate checks for requests made straight to it."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from apiserver import expand_vm
from devcluster.objects import small_vm
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.deployed import DeployedServer
from tests.support.patience import patience

GROUP = "subresources.kubevirt.io"
EXPAND_RULES = [
    {"apiGroups": [GROUP], "resources": ["virtualmachines/expand-spec"], "verbs": ["get"]},
    {"apiGroups": [GROUP], "resources": ["expand-vm-spec"], "verbs": ["update"]},
]
OVERLAY_ROLE = "kubevirt-expand:expand"


def store_vm(cluster: ControlPlane, namespace: str) -> dict[str, Any]:
    """A VM with a namespaced instancetype; returns what the engine renders for it as stored."""
    instancetype, vm = small_vm(namespace)
    cluster.apply(instancetype, vm)
    return expand_vm(cluster.get_json("virtualmachine", "vm1", "-n", namespace), [instancetype])


def binding(namespace: str, name: str, role: dict[str, str], *subjects: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", **role},
        "subjects": list(subjects),
    }


def user(name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


def expander_role(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "expander", "namespace": namespace},
        "rules": EXPAND_RULES,
    }


def expand_spec(namespace: str) -> str:
    return f"/apis/{GROUP}/v1/namespaces/{namespace}/virtualmachines/vm1/expand-spec"


def expand_vm_spec(namespace: str) -> str:
    return f"/apis/{GROUP}/v1/namespaces/{namespace}/expand-vm-spec"


# -- through the aggregator ------------------------------------------------------------------------


@pytest.mark.parametrize("grant", ["role", "overlay-clusterrole", "role-for-a-group"])
def test_kubectl_as_a_user_refused_by_rbac_then_allowed(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str, grant: str, tmp_path: Any
) -> None:
    expected = store_vm(control_plane, namespace)
    alice = f"alice-{namespace}"
    vm_file = tmp_path / "vm.json"
    vm_file.write_text(json.dumps(control_plane.get_json("virtualmachine", "vm1", "-n", namespace)))
    team = f"team-{namespace}"
    who = (f"--as={alice}", f"--as-group={team}") if grant == "role-for-a-group" else (f"--as={alice}",)
    get = ("get", "--raw", expand_spec(namespace), *who)
    put = ("replace", "--raw", expand_vm_spec(namespace), "-f", str(vm_file), *who)
    log_start = deployed.log_size()

    refused = control_plane.kubectl(*get, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f'Error from server (Forbidden): virtualmachines.{GROUP} "vm1" is forbidden: User "{alice}" cannot get '
        f'resource "virtualmachines/expand-spec" in API group "{GROUP}" in the namespace "{namespace}"'
    )
    refused = control_plane.kubectl(*put, check=False)
    assert refused.returncode == 1
    assert f'User "{alice}" cannot update resource "expand-vm-spec" in API group "{GROUP}"' in refused.stderr
    # kube-apiserver refused before proxying: our server never saw alice.
    assert not any(alice in line for line in deployed.log_lines_since(log_start))

    if grant == "role":
        control_plane.apply(
            expander_role(namespace),
            binding(namespace, "alice", {"kind": "Role", "name": "expander"}, user(alice)),
        )
    elif grant == "role-for-a-group":
        # Only the group is bound: our server's SubjectAccessReview must carry the X-Remote-Group values.
        group = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": team}
        control_plane.apply(
            expander_role(namespace), binding(namespace, "team", {"kind": "Role", "name": "expander"}, group)
        )
    else:
        # What view/edit/admin would grant once kube-controller-manager's clusterrole-aggregation
        # controller had copied the overlay's rules into them (see test_overlay_role_aggregates_...).
        control_plane.apply(
            binding(namespace, "alice", {"kind": "ClusterRole", "name": OVERLAY_ROLE}, user(alice))
        )
    assert json.loads(_eventually_ok(control_plane, get)) == expected
    assert json.loads(_eventually_ok(control_plane, put)) == expected
    # Our server authorized alice itself (SubjectAccessReview), as the access log shows.
    lines = deployed.wait_log(log_start, lambda line: alice in line and '"PUT' in line)
    entries = [json.loads(line) for line in lines]
    assert {(e["method"], e["code"]) for e in entries if e.get("user") == alice} == {
        ("GET", 200),
        ("PUT", 200),
    }


def _eventually_ok(cluster: ControlPlane, args: tuple[str, ...], timeout: float = 10) -> str:
    """RBAC changes reach kube-apiserver's authorizer through its watch cache: a moment, not at once."""
    deadline = time.monotonic() + patience(timeout)
    while True:
        result = cluster.kubectl(*args, check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            assert result.returncode == 0, result.stderr
            return result.stdout
        time.sleep(0.1)


def test_overlay_role_aggregates_to_view_edit_and_admin(
    control_plane: ControlPlane, deployed: DeployedServer
) -> None:
    """The aggregation itself is done by kube-controller-manager, which this control plane does not run
    (the real view/edit/admin roles stay without rules here); what the real API server can show is
    that their selectors pick the overlay's role."""
    labels = control_plane.get_json("clusterrole", OVERLAY_ROLE)["metadata"]["labels"]
    for name in ("view", "edit", "admin"):
        role = control_plane.get_json("clusterrole", name)
        selectors = role["aggregationRule"]["clusterRoleSelectors"]
        assert any(
            all(labels.get(k) == v for k, v in selector["matchLabels"].items()) for selector in selectors
        ), (name, selectors)


# -- straight to the server ------------------------------------------------------------------------


def test_front_proxy_certificate_for_a_user_without_rights_gets_403(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    store_vm(control_plane, namespace)
    proxy = control_plane.pki.front_proxy_client
    someone = f"someone-{namespace}"
    code, body = deployed.direct(
        expand_spec(namespace),
        headers={"X-Remote-User": someone, "X-Remote-Group": "system:authenticated"},
        cert=(proxy.cert_file, proxy.key_file),
    )
    assert code == 403
    assert json.loads(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'virtualmachines.{GROUP} "vm1" is forbidden: User "{someone}" cannot get resource '
        f'"virtualmachines/expand-spec" in API group "{GROUP}" in the namespace "{namespace}"',
        "reason": "Forbidden",
        "details": {"name": "vm1", "group": GROUP, "kind": "virtualmachines"},
        "code": 403,
    }


def test_identity_headers_without_the_certificate_get_401(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    store_vm(control_plane, namespace)
    code, body = deployed.direct(
        expand_spec(namespace), headers={"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}
    )
    assert code == 401
    assert json.loads(body)["reason"] == "Unauthorized"


def service_account(namespace: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}


def test_service_account_tokens_through_tokenreview(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    expected = store_vm(control_plane, namespace)
    sa = {"kind": "ServiceAccount", "name": "expander", "namespace": namespace}
    control_plane.apply(
        service_account(namespace, "expander"),
        service_account(namespace, "outsider"),
        expander_role(namespace),
        binding(namespace, "expander", {"kind": "Role", "name": "expander"}, sa),
    )
    allowed = control_plane.token("expander", namespace)
    code, body = deployed.direct(expand_spec(namespace), headers={"Authorization": f"Bearer {allowed}"})
    assert (code, json.loads(body)) == (200, expected)

    denied = control_plane.token("outsider", namespace)
    code, body = deployed.direct(expand_spec(namespace), headers={"Authorization": f"Bearer {denied}"})
    assert code == 403
    assert json.loads(body)["message"].endswith(
        f'User "system:serviceaccount:{namespace}:outsider" cannot get resource "virtualmachines/expand-spec" '
        f'in API group "{GROUP}" in the namespace "{namespace}"'
    )

    code, body = deployed.direct(expand_spec(namespace), headers={"Authorization": "Bearer not-a-token"})
    assert code == 401


def test_client_certificates_of_the_cluster_ca(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    expected = store_vm(control_plane, namespace)
    bob, carol = f"bob-{namespace}", f"carol-{namespace}"
    control_plane.apply(
        expander_role(namespace), binding(namespace, "bob", {"kind": "Role", "name": "expander"}, user(bob))
    )
    creds = control_plane.pki.client(bob, "team")
    # The binding reaches kube-apiserver's authorizer a moment after apply returns (and a refusal seen
    # meanwhile is cached for a few seconds, as kube-apiserver's webhook authorizer caches one).
    deadline = time.monotonic() + patience(30)
    while True:
        code, body = deployed.direct(expand_spec(namespace), cert=(creds.cert_file, creds.key_file))
        if code != 403 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert (code, json.loads(body)) == (200, expected)

    creds = control_plane.pki.client(carol)
    code, body = deployed.direct(expand_spec(namespace), cert=(creds.cert_file, creds.key_file))
    assert code == 403
    assert f'User "{carol}" cannot get resource' in json.loads(body)["message"]

    creds = control_plane.pki.client(f"root-{namespace}", "system:masters")
    code, body = deployed.direct(expand_spec(namespace), cert=(creds.cert_file, creds.key_file))
    assert (code, json.loads(body)) == (200, expected)
