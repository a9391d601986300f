"""expandedvirtualmachines through the real aggregator, with kubectl as the client: get, -A, -l,
-o wide, -o yaml, --chunk-size, -w (an instancetype edit shows), explain, RBAC refused and granted.
The same behaviour against the fake API server: tests/http/endpoints/test_expandedvms.py."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from apiserver.render.kubernetes.quantitymath import readable_bytes
from hack.oracle import launcher_corpus as CORPUS
from tests.realk8s.controlplane import KUBECTL, ControlPlane, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import binding, user
from tests.support.clusters import apply_as_kubevirt

RESOURCE = "expandedvirtualmachines"
CASES = CORPUS.REPO / "tests" / "render" / "launcher" / "cases"
ROLE = "kubevirt-expand:expandedvirtualmachines"


def modified_rows(watch: subprocess.Popen[str], count: int, seconds: float) -> list[list[str]]:
    """The first ``count`` MODIFIED rows of a ``kubectl get -w --output-watch-events`` (its columns), or
    those that came within ``seconds``."""
    assert watch.stdout is not None
    deadline = time.monotonic() + seconds
    modified: list[list[str]] = []
    while len(modified) < count and time.monotonic() < deadline:
        line = watch.stdout.readline()
        if line.startswith("MODIFIED"):
            modified.append(line.split())
    return modified


def instancetype(namespace: str, name: str, cpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": "2Gi"}},
    }


def vm(namespace: str, name: str, it: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "instancetype": {"kind": "VirtualMachineInstancetype", "name": it},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }


def populate(cluster: ControlPlane, namespace: str) -> None:
    cluster.apply(
        instancetype(namespace, "small", 2),
        instancetype(namespace, "large", 8),
        *(vm(namespace, f"vm-{i}", "small", {"tier": "web" if i % 2 else "db"}) for i in range(4)),
        vm(namespace, "big", "large", {"tier": "db"}),
        vm(namespace, "broken", "absent", {"tier": "web"}),
    )


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


def wait_listed(cluster: ControlPlane, namespace: str, count: int) -> None:
    poll(
        f"{count} items in {namespace}",
        lambda: cluster.kubectl("get", RESOURCE, "-n", namespace, "-o", "name", check=False).stdout.split(),
        lambda names: len(names) == count,
        timeout=30,
    )


def test_kubectl_get_table_wide_yaml_selectors_chunks(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    populate(control_plane, namespace)
    wait_listed(control_plane, namespace, 6)
    table = rows(control_plane.kubectl("get", RESOURCE, "-n", namespace).stdout)
    assert table[0] == [
        "NAME",
        "INSTANCETYPE",
        "PREFERENCE",
        "CPU",
        "MEMORY",
        "CPU-REQUEST",
        "MEMORY-REQUEST",
        "STATUS",
        "STALE",
        "UPGRADE",
        "AGE",
    ]
    by_name = {r[0]: r for r in table[1:]}
    assert by_name["vm-0"][1:5] + by_name["vm-0"][7:8] == ["small", "<none>", "2", "2Gi", "Rendered"]
    assert by_name["big"][1:5] + by_name["big"][7:8] == ["large", "<none>", "8", "2Gi", "Rendered"]
    # a VM that does not render: its typed cells (CPU, the pod's requests) are null, which kubectl prints
    # blank (so the row splits into fewer words); MEMORY, a string column, says <none>
    assert by_name["broken"][1:5] == ["absent", "<none>", "<none>", "Invalid"]

    wide = rows(control_plane.kubectl("get", "evm", "-n", namespace, "-o", "wide").stdout)
    assert wide[0][:11] == table[0] and wide[0][11:14] == [
        "TOPOLOGY",
        "INSTANCETYPE-SOURCE",
        "PREFERENCE-SOURCE",
    ]
    # STALE is false (no revision captured), UPGRADE null (kubectl prints it blank): TOPOLOGY is word 10
    big = {r[0]: r for r in wide[1:]}["big"]
    assert big[8] == "false" and big[10] in ("1/8/1", "8/1/1")

    web = rows(control_plane.kubectl("get", RESOURCE, "-n", namespace, "-l", "tier=web").stdout)
    assert sorted(r[0] for r in web[1:]) == ["broken", "vm-1", "vm-3"]

    everywhere = rows(control_plane.kubectl("get", RESOURCE, "-A").stdout)
    assert everywhere[0][:2] == ["NAMESPACE", "NAME"]
    assert sum(1 for r in everywhere[1:] if r[0] == namespace) == 6

    doc = json.loads(control_plane.kubectl("get", RESOURCE, "-n", namespace, "vm-1", "-o", "json").stdout)
    expand = json.loads(
        control_plane.kubectl(
            "get",
            "--raw",
            f"/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/vm-1/expand-spec",
        ).stdout
    )
    assert doc["virtualMachine"] == expand
    assert doc["summary"]["cpu"]["vcpus"] == 2
    yaml_out = control_plane.kubectl("get", RESOURCE, "-n", namespace, "vm-1", "-o", "yaml").stdout
    assert "kind: ExpandedVirtualMachine" in yaml_out and "virtualMachine:" in yaml_out

    chunked = control_plane.kubectl("get", RESOURCE, "-n", namespace, "--chunk-size=2", "-o", "name", "-v=6")
    assert sorted(chunked.stdout.split()) == sorted(
        f"expandedvirtualmachine.expand.kubevirt-expand.io/{n}"
        for n in ["big", "broken", "vm-0", "vm-1", "vm-2", "vm-3"]
    )
    assert chunked.stderr.count("limit=2") >= 3  # three pages of two


def test_kubectl_get_watch_shows_an_instancetype_edit(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    populate(control_plane, namespace)
    wait_listed(control_plane, namespace, 6)
    assert KUBECTL is not None
    watch = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(control_plane.admin_kubeconfig),
            "get",
            RESOURCE,
            "-n",
            namespace,
            "-w",
            "--output-watch-events",
            "--no-headers",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines: list[str] = []
        assert watch.stdout is not None
        while len(lines) < 6:  # the list first
            lines.append(watch.stdout.readline())
        control_plane.apply(instancetype(namespace, "small", 4))
        modified = modified_rows(watch, 4, 30)
        assert sorted(r[1] for r in modified) == ["vm-0", "vm-1", "vm-2", "vm-3"]
        assert {r[4] for r in modified} == {"4"}
    finally:
        watch.terminate()
        watch.wait(10)


def test_kubectl_explain(deployed: DeployedServer, control_plane: ControlPlane) -> None:
    out = poll(
        "kubectl explain",
        lambda: control_plane.kubectl("explain", f"{RESOURCE}.summary.cpu", check=False),
        lambda result: result.returncode == 0,
        timeout=60,
    ).stdout
    assert "KIND:" in out and "ExpandedVirtualMachine" in out and "vcpus" in out


def test_rbac_refused_then_granted(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    populate(control_plane, namespace)
    wait_listed(control_plane, namespace, 6)
    carol = f"carol-{namespace}"
    refused = control_plane.kubectl("get", RESOURCE, "-n", namespace, f"--as={carol}", check=False)
    assert refused.returncode == 1
    assert (
        f'User "{carol}" cannot list resource "{RESOURCE}" in API group "expand.kubevirt-expand.io" '
        f'in the namespace "{namespace}"' in refused.stderr
    )
    control_plane.apply(binding(namespace, "carol", {"kind": "ClusterRole", "name": ROLE}, user(carol)))
    granted = poll(
        "carol may list",
        lambda: control_plane.kubectl(
            "get", RESOURCE, "-n", namespace, f"--as={carol}", "-o", "name", check=False
        ),
        lambda result: result.returncode == 0,
        timeout=30,
    )
    assert len(granted.stdout.split()) == 6
    # Listing every namespace is still refused: the grant is for this one.
    assert control_plane.kubectl("get", RESOURCE, "-A", f"--as={carol}", check=False).returncode == 1


def test_kubectl_get_shows_the_examples_pod_requests_as_kubevirt_computes_them(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    """The examples' VMs through kubectl: CPU-REQUEST and MEMORY-REQUEST (in binary units) are the
    virt-launcher pod's requests KubeVirt's own template service gave for them (``expand-launcher``, committed as
    tests/render/launcher/cases/examples.jsonl)."""
    vms, objects, _ = CORPUS.example_objects()
    moved = []
    for obj in [*objects, *vms]:
        obj = json.loads(json.dumps(obj))
        if obj.get("metadata", {}).get("namespace"):
            obj["metadata"]["namespace"] = namespace
        moved.append(obj)
    # fedora-pinned's status ref (its captured revision) through /status, as virt-controller writes it.
    apply_as_kubevirt(control_plane, *moved)
    wait_listed(control_plane, namespace, len(vms))
    answers = {
        case["name"]: case["answer"]["total"]["requests"]
        for case in map(json.loads, (CASES / "examples.jsonl").read_text().splitlines())
    }
    # The status write is a second event after the VM's creation: wait until the store rendered it.
    table = poll(
        "fedora-pinned rendered from its revision",
        lambda: rows(control_plane.kubectl("get", RESOURCE, "-n", namespace).stdout),
        lambda t: any(r[0] == "fedora-pinned" and r[5] == answers["fedora-pinned"]["cpu"] for r in t[1:]),
    )
    assert table[0][5:7] == ["CPU-REQUEST", "MEMORY-REQUEST"]
    shown = {r[0]: r[5:7] for r in table[1:]}
    assert set(shown) == set(answers) == {vm["metadata"]["name"] for vm in vms}
    for name, requests in answers.items():
        # memory in binary units, as people read it (1346Mi for 1410731712 bytes, rounded up)
        assert shown[name] == [requests["cpu"], readable_bytes(requests["memory"])], name
