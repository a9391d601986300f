"""docs/cost.md's policy recipe on a real kube-apiserver v1.28 with ValidatingAdmissionPolicy on: the ConfigMap
``kubevirt-expand catalog sizes --cluster`` writes, then the page's own YAML (its ``policy`` blocks, as
written), and kubectl refuses a VM whose instancetype's virt-launcher pod would request more memory than
the cap (an instancetype of exactly the cap too: the pod adds KubeVirt's overhead) and admits a small one.

On a control plane of its own (the policy applies to every VM of the cluster; the others' tests must not
meet it): ``private_plane``, started with :data:`devcluster.controlplane.VALIDATING_ADMISSION_POLICY_ARGS`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.cli.test_expand_gate import COMMAND
from tests.project.test_readme_recipes import REPO, page_recipes
from tests.realk8s.controlplane import ControlPlane, poll

CAP = 4 * 1024**3  # the recipe's cap: 4Gi
POLICY = "vm-pod-memory-cap"


def cluster_instancetype(name: str, memory: str, hugepages: str = "") -> dict[str, Any]:
    paged = {"hugepages": {"pageSize": hugepages}} if hugepages else {}
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": 1}, "memory": {"guest": memory, **paged}},
    }


def vm(namespace: str, name: str, instancetype: dict[str, str]) -> str:
    return json.dumps(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "runStrategy": "Halted",
                "instancetype": instancetype,
                "template": {"spec": {"domain": {"devices": {}}}},
            },
        }
    )


def create(cluster: ControlPlane, body: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("create", "-f", "-", *extra, stdin=body, check=False)


def test_the_recipe_refuses_a_vm_whose_pod_exceeds_the_cap(
    private_plane: ControlPlane, tmp_path: Path
) -> None:
    cluster = private_plane
    team = cluster.new_namespace("team")
    cluster.kubectl("create", "namespace", "kubevirt-expand")
    cluster.apply(
        cluster_instancetype("small", "1Gi"),
        cluster_instancetype("exact", "4Gi"),
        cluster_instancetype("large", "8Gi"),
        cluster_instancetype("paged", "8Gi", hugepages="2Mi"),
        {
            "apiVersion": "instancetype.kubevirt.io/v1beta1",
            "kind": "VirtualMachineInstancetype",
            "metadata": {"name": "team-small", "namespace": team},
            "spec": {"cpu": {"guest": 1}, "memory": {"guest": "512Mi"}},
        },
    )

    # The parameter: written by the command from the cluster, applied as the docs say.
    sizes = subprocess.run(
        [
            *COMMAND,
            "catalog",
            "sizes",
            "--cluster",
            "-n",
            team,
            "--configmap",
            "kubevirt-expand/vm-sizes",
            "--kubeconfig",
            str(cluster.admin_kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sizes.returncode == 0, sizes.stderr
    configmap = yaml.safe_load(sizes.stdout)
    data = configmap["data"]
    assert set(data) == {
        f"{prefix}.{resource}"
        for prefix in (
            "cluster.small",
            "cluster.exact",
            "cluster.large",
            "cluster.paged",
            f"ns.{team}.team-small",
        )
        for resource in ("memory", "hugepages", "cpu")
    }
    # The pod asks for the guest's memory and KubeVirt's overhead on top.
    assert int(data["cluster.exact.memory"]) > CAP
    assert int(data["cluster.small.memory"]) > 1024**3
    cluster.kubectl("apply", "-f", "-", stdin=sizes.stdout)

    # The page's policy and binding, exactly as written.
    (block,) = page_recipes(REPO / "docs" / "cost.md", "policy")
    cluster.kubectl("apply", "-f", "-", stdin=block.code)

    # The policy takes effect once kube-apiserver has read it (and type-checked it): until then a
    # dry run of the too-big VM is admitted.
    large = vm(team, "big", {"name": "large"})
    poll(
        "the policy refuses a dry run",
        lambda: create(cluster, large, "--dry-run=server"),
        lambda result: result.returncode != 0 and POLICY in result.stderr,
        timeout=60,
    )

    refused = create(cluster, large)
    assert refused.returncode != 0
    assert f"ValidatingAdmissionPolicy '{POLICY}'" in refused.stderr
    assert (
        f"the virt-launcher pod of instancetype large requests {data['cluster.large.memory']} bytes of "
        f"memory and hugepages, more than the cap of 4Gi ({CAP})"
    ) in refused.stderr

    # 4Gi of guest memory is refused too: the pod's request passes the cap by the overhead.
    exact = create(cluster, vm(team, "exact", {"kind": "VirtualMachineClusterInstancetype", "name": "exact"}))
    assert exact.returncode != 0 and f"requests {data['cluster.exact.memory']} bytes" in exact.stderr

    # Guest memory in hugepages counts: the pod's memory request (the overhead) alone is under the cap.
    assert int(data["cluster.paged.memory"]) < CAP and data["cluster.paged.hugepages"] == str(8 * 1024**3)
    paged = create(cluster, vm(team, "paged", {"name": "paged"}))
    total = int(data["cluster.paged.memory"]) + int(data["cluster.paged.hugepages"])
    assert paged.returncode != 0 and f"requests {total} bytes of memory and hugepages" in paged.stderr

    # An instancetype the ConfigMap does not know is refused, naming the fix.
    unknown = create(cluster, vm(team, "unknown", {"name": "absent"}))
    assert unknown.returncode != 0
    assert "instancetype absent is not in ConfigMap vm-sizes" in unknown.stderr

    # Small ones are admitted: a cluster instancetype, and a namespaced one (its key names the namespace).
    small = create(cluster, vm(team, "small", {"name": "small"}))
    assert small.returncode == 0, small.stderr
    own = create(cluster, vm(team, "own", {"kind": "VirtualMachineInstancetype", "name": "team-small"}))
    assert own.returncode == 0, own.stderr
    names = cluster.kubectl("get", "vm", "-n", team, "-o", "name").stdout.split()
    assert sorted(names) == ["virtualmachine.kubevirt.io/own", "virtualmachine.kubevirt.io/small"]
