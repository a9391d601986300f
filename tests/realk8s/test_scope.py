"""Issue 24's reproductions 1, 4 and 5 through the real aggregator, against the server as deployed: a
request reads only inside the scope it was authorized for, redacted answers say one fixed thing, and
the access log keeps only the query parameters the server defines.

Callers (kubectl ``--as``, which kube-apiserver forwards as X-Remote-User): ``tenant-a`` may get, list
and watch ``expandedvirtualmachines`` in namespace A only (the collection's ClusterRole, bound there).
Namespace B holds a VM whose cloud-init user data is a password; nothing of it may reach tenant-a.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.realk8s.controlplane import KUBECTL, ControlPlane, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_collection import RESOURCE, ROLE, instancetype, wait_listed
from tests.realk8s.test_tenancy import CDI_KINDS, crd

COLLECTION = "/apis/expand.kubevirt-expand.io/v1"
RBAC = "rbac.authorization.k8s.io"


def secret_vm(namespace: str, name: str, password: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace, "labels": {"mark": password}},
        "spec": {
            "instancetype": {"kind": "VirtualMachineInstancetype", "name": "small"},
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [
                        {
                            "name": "cloudinit",
                            "cloudInitNoCloud": {"userData": f"#cloud-config\npassword: {password}\n"},
                        }
                    ],
                }
            },
            **spec,
        },
    }


@dataclass
class Tenants:
    a: str
    b: str
    tenant: str  # may get/list/watch the collection in namespace A only
    password_b: str


@pytest.fixture(scope="module")
def tenants(control_plane: ControlPlane, deployed: DeployedServer) -> Iterator[Tenants]:
    suffix = uuid.uuid4().hex[:8]
    t = Tenants(
        a=control_plane.new_namespace("scope-a"),
        b=control_plane.new_namespace("scope-b"),
        tenant=f"tenant-a-{suffix}",
        password_b=f"PASSWORD-B-{suffix}",
    )
    control_plane.apply(
        instancetype(t.a, "small", 2),
        instancetype(t.b, "small", 4),
        secret_vm(t.a, "vm-a", f"PASSWORD-A-{suffix}"),
        secret_vm(t.b, "vm-b", t.password_b),
        secret_vm(t.b, "vm-a", t.password_b),  # the same name as A's VM
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "collection", "namespace": t.a},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": ROLE},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": t.tenant}],
        },
    )
    wait_listed(control_plane, t.a, 1)
    wait_listed(control_plane, t.b, 2)
    poll(
        "RBAC for the tenant in effect",
        lambda: control_plane.kubectl(
            "auth", "can-i", "watch", RESOURCE, "-n", t.a, f"--as={t.tenant}", check=False
        ).stdout.strip(),
        lambda answer: answer == "yes",
    )
    yield t


def as_tenant(cluster: ControlPlane, t: Tenants, path: str) -> tuple[int, str]:
    done = cluster.kubectl("get", "--raw", path, f"--as={t.tenant}", check=False)
    return (0 if done.returncode == 0 else 1), done.stdout + done.stderr


# -- 1: a field selector naming another namespace ---------------------------------------------------


@pytest.mark.parametrize("selector", ["metadata.namespace={b}", "metadata.namespace=={b}"])
def test_a_field_selector_naming_another_namespace_lists_nothing(
    control_plane: ControlPlane, tenants: Tenants, selector: str
) -> None:
    t = tenants
    field = selector.format(b=t.b)
    code, out = as_tenant(control_plane, t, f"{COLLECTION}/namespaces/{t.a}/{RESOURCE}?fieldSelector={field}")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["kind"] == "ExpandedVirtualMachineList" and doc["items"] == [], out
    assert t.password_b not in out
    # kubectl as the issue shows it: the same, as a table
    done = control_plane.kubectl(
        "get", RESOURCE, "-n", t.a, "--field-selector", field, f"--as={t.tenant}", "-o", "json", check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"] == [] and t.password_b not in done.stdout
    # Within the scope, the selector still selects.
    own = as_tenant(
        control_plane, t, f"{COLLECTION}/namespaces/{t.a}/{RESOURCE}?fieldSelector=metadata.namespace={t.a}"
    )
    assert [i["metadata"]["name"] for i in json.loads(own[1])["items"]] == ["vm-a"]


def test_a_watch_with_a_field_selector_naming_another_namespace_sends_nothing(
    control_plane: ControlPlane, deployed: DeployedServer, tenants: Tenants
) -> None:
    t = tenants
    held = "kubevirt_expand_watches_held"
    poll("earlier tests' watches ended", lambda: deployed.metric(held), lambda n: n == 0, timeout=30)
    assert KUBECTL is not None
    path = f"{COLLECTION}/namespaces/{t.a}/{RESOURCE}?watch=1&timeoutSeconds=4&fieldSelector=metadata.namespace%3D{t.b}"
    watch = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(control_plane.admin_kubeconfig),
            "get",
            "--raw",
            path,
            f"--as={t.tenant}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The watch holds its place once it has its starting point: a change in B now would be a live event.
        poll("the watch open", lambda: deployed.metric(held), lambda n: n == 1)
        control_plane.kubectl(
            "label", "vm", "-n", t.b, "vm-b", f"changed={uuid.uuid4().hex[:6]}", "--overwrite"
        )
        out, err = watch.communicate(timeout=30)
    finally:
        watch.kill()
    assert watch.returncode == 0, err
    assert out.strip() == "", out  # no ADDED for B's VMs, no MODIFIED for the label
    assert t.password_b not in out


def test_a_continue_token_of_another_namespace_is_refused(
    control_plane: ControlPlane, tenants: Tenants
) -> None:
    t = tenants
    first = json.loads(
        control_plane.kubectl("get", "--raw", f"{COLLECTION}/namespaces/{t.b}/{RESOURCE}?limit=1").stdout
    )
    token = first["metadata"]["continue"]
    code, out = as_tenant(
        control_plane, t, f"{COLLECTION}/namespaces/{t.a}/{RESOURCE}?limit=1&continue={token}"
    )
    assert code == 1 and "continue" in out and t.password_b not in out, out


# -- 4: a redacted item says the same whether the object exists or not ------------------------------


@pytest.fixture(scope="module")
def cdi(control_plane: ControlPlane) -> Iterator[None]:
    crds = [crd("cdi.kubevirt.io", kind, plural) for kind, plural in CDI_KINDS]
    control_plane.apply(*crds)
    control_plane.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        *(f"crd/{c['metadata']['name']}" for c in crds),
    )
    yield


def _datasource_vm(namespace: str, name: str, source_ns: str, source: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "instancetype": {"inferFromVolume": "root"},
            "dataVolumeTemplates": [
                {
                    "metadata": {"name": f"{name}-root"},
                    "spec": {"sourceRef": {"kind": "DataSource", "name": source, "namespace": source_ns}},
                }
            ],
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [{"name": "root", "dataVolume": {"name": f"{name}-root"}}],
                }
            },
        },
    }


def test_a_redacted_item_says_the_same_for_an_object_that_exists_and_one_that_does_not(
    control_plane: ControlPlane, tenants: Tenants, cdi: None
) -> None:
    t = tenants
    control_plane.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "golden-disk", "namespace": t.b},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
        {
            "apiVersion": "cdi.kubevirt.io/v1beta1",
            "kind": "DataSource",
            "metadata": {"name": "golden", "namespace": t.b},
            "spec": {"source": {"pvc": {"name": "golden-disk", "namespace": t.b}}},
        },
        _datasource_vm(t.a, "from-golden", t.b, "golden"),
        _datasource_vm(t.a, "from-nothing", t.b, "nope-ds"),
    )
    wait_listed(control_plane, t.a, 3)
    code, out = as_tenant(control_plane, t, f"{COLLECTION}/namespaces/{t.a}/{RESOURCE}")
    assert code == 0, out
    items = {i["metadata"]["name"]: i for i in json.loads(out)["items"]}
    seen = {name: items[name]["status"]["conditions"] for name in ("from-golden", "from-nothing")}
    assert seen["from-golden"] == seen["from-nothing"], seen
    assert seen["from-golden"][0]["reason"] == "Forbidden"
    assert "persistentvolumeclaims" not in json.dumps(seen)
    for name in ("from-golden", "from-nothing"):
        assert "virtualMachine" not in items[name]
    # The Table's cells too.
    table = control_plane.kubectl("get", RESOURCE, "-n", t.a, f"--as={t.tenant}", "-o", "wide").stdout
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[1:]}
    assert rows["from-golden"][:7] == rows["from-nothing"][:7], table  # INSTANCETYPE ... STATUS


# -- 5: query parameters the server does not define are not logged ----------------------------------


@pytest.mark.parametrize("name", ["pw%64", "pwd", "x", "fieldSelector%00"])
def test_the_access_log_keeps_only_the_query_parameters_the_server_defines(
    control_plane: ControlPlane, deployed: DeployedServer, tenants: Tenants, name: str
) -> None:
    t = tenants
    secret = f"SECRET-{uuid.uuid4().hex[:10]}"
    offset = deployed.log_size()
    path = f"{COLLECTION}/namespaces/{t.a}/{RESOURCE}?limit=5&{name}={secret}"
    code, out = as_tenant(control_plane, t, path)
    assert code == 0, out
    lines = deployed.wait_log(offset, lambda line: f"/namespaces/{t.a}/{RESOURCE}" in line)
    access = [line for line in lines if f"/namespaces/{t.a}/{RESOURCE}" in line]
    assert access and all(secret not in line for line in lines), access
    assert any("limit=5" in line for line in access), access  # a parameter of the API is kept as sent
