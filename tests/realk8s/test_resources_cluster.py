"""``kubevirt-expand resources --cluster`` against the real control plane: a namespace's VMs, their
instancetypes, the Namespace and its ResourceQuota read through the kubeconfig; which VMs fit, the quota
and the amount named, the exit code; the same verdicts from ``kubectl get ... -o yaml | resources -f -``.

There is no kube-controller-manager here, so no quota controller fills in the ResourceQuota's
``status.used``: the test writes it through the status subresource, as the quota controller would for
pods already running, and checks that the command counts it."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

from apiserver.render.kubernetes.quantity import parse_quantity
from tests.cli.test_expand_gate import COMMAND
from tests.realk8s.controlplane import ControlPlane

USED = "512Mi"  # what "already runs" in the namespace, as the quota controller would have counted it


def instancetype(namespace: str, name: str, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"cpu": {"guest": 1}, "memory": {"guest": memory}},
    }


def vm(namespace: str, name: str, it: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runStrategy": "Halted",
            "instancetype": {"kind": "VirtualMachineInstancetype", "name": it},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }


def set_quota(cluster: ControlPlane, namespace: str, hard: str) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "team-quota", "namespace": namespace},
        "spec": {"hard": {"requests.memory": hard}},
    }
    cluster.apply(quota)
    # The quota controller's part (kube-controller-manager does not run here): its status.
    status = {"status": {"hard": {"requests.memory": hard}, "used": {"requests.memory": USED}}}
    cluster.kubectl(
        "patch",
        "resourcequota",
        "team-quota",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )


def resources(
    cluster: ControlPlane, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, "resources", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=120,
    )


def by_name(out: str) -> dict[str, dict[str, Any]]:
    lines = [json.loads(line) for line in out.splitlines()]
    return {line["name"]: line for line in lines if line["kind"] == "VirtualMachine"}


def test_a_namespace_of_the_cluster_against_its_quota(control_plane: ControlPlane) -> None:
    namespace = control_plane.new_namespace("quota")
    control_plane.apply(
        instancetype(namespace, "small", "1Gi"),
        instancetype(namespace, "large", "4Gi"),
        vm(namespace, "a-small", "small"),
        vm(namespace, "b-large", "large"),
    )
    set_quota(control_plane, namespace, "3Gi")
    kubeconfig = str(control_plane.admin_kubeconfig)

    # As text: the table says which VM fits, stderr names the quota and the amounts, exit 1.
    text = resources(control_plane, "--cluster", "-n", namespace, "--kubeconfig", kubeconfig)
    assert text.returncode == 1, text.stderr
    rows = {line.split()[1]: line.split() for line in text.stdout.split("\n\n")[0].splitlines()[1:]}
    assert rows["a-small"][-1] == "yes" and rows["b-large"][-1] == "no"
    assert f"{namespace}/b-large would be refused at start: exceeded quota: team-quota" in text.stderr
    assert "limited: requests.memory=3Gi" in text.stderr
    assert "a-small would be refused" not in text.stderr

    # As JSON lines: the amounts. The usage the large VM meets is status.used plus the small VM's pod.
    lines = resources(control_plane, "--cluster", "-n", namespace, "--kubeconfig", kubeconfig, "-o", "jsonl")
    assert lines.returncode == 1, lines.stderr
    vms = by_name(lines.stdout)
    small = parse_quantity(vms["a-small"]["pod"]["total"]["requests"]["memory"]).value
    large = vms["b-large"]["pod"]["total"]["requests"]["memory"]
    assert vms["a-small"]["fits"] is True and vms["b-large"]["fits"] is False
    (reason,) = vms["b-large"]["refusedBy"]
    used = parse_quantity(USED).value + small
    assert reason == (
        f"exceeded quota: team-quota, requested: requests.memory={large}, "
        f"used: requests.memory={used}, limited: requests.memory=3Gi"
    )
    (ns_line,) = [json.loads(x) for x in lines.stdout.splitlines() if json.loads(x)["kind"] == "Namespace"]
    assert ns_line["namespace"] == namespace and ns_line["vms"] == 2
    assert [q["name"] for q in ns_line["quotas"]] == ["team-quota"]
    # No application-aware-quota here (its CRDs are not installed): passed over without a word.
    assert "applicationAwareQuotas" not in ns_line
    assert "ApplicationAwareResourceQuota" not in lines.stderr

    # Every namespace (-A): the same lines for this namespace's VMs (other tests' VMs are there too).
    every = resources(control_plane, "--cluster", "-A", "--kubeconfig", kubeconfig, "-o", "jsonl")
    assert every.returncode == 1, every.stderr
    mine = {
        line["name"]: line
        for line in map(json.loads, every.stdout.splitlines())
        if line["kind"] == "VirtualMachine" and line["namespace"] == namespace
    }
    assert set(mine) == {"a-small", "b-large"}
    for name, line in mine.items():
        assert line == vms[name]

    # What kubectl prints (List documents), piped in, gets the same verdicts and pods.
    printed = (
        control_plane.kubectl("get", "namespace", namespace, "-o", "yaml").stdout
        + "---\n"
        + control_plane.kubectl(
            "get", "vm,virtualmachineinstancetypes,resourcequotas", "-n", namespace, "-o", "yaml"
        ).stdout
    )
    piped = resources(control_plane, "-", "-o", "jsonl", stdin=printed)
    assert piped.returncode == 1, piped.stderr
    for name, line in by_name(piped.stdout).items():
        assert {k: v for k, v in line.items() if k != "source"} == {
            k: v for k, v in vms[name].items() if k != "source"
        }

    # With room enough, every VM fits: exit 0.
    set_quota(control_plane, namespace, "20Gi")
    roomy = resources(control_plane, "--cluster", "-n", namespace, "--kubeconfig", kubeconfig)
    assert roomy.returncode == 0, roomy.stderr
    assert "would be refused" not in roomy.stderr
    rows = {line.split()[1]: line.split() for line in roomy.stdout.split("\n\n")[0].splitlines()[1:]}
    assert rows["a-small"][-1] == rows["b-large"][-1] == "yes"


def test_the_cluster_form_says_what_it_cannot_read(control_plane: ControlPlane) -> None:
    namespace = control_plane.new_namespace("quota-empty")
    kubeconfig = str(control_plane.admin_kubeconfig)
    empty = resources(control_plane, "--cluster", "-n", namespace, "--kubeconfig", kubeconfig)
    assert empty.returncode == 2
    assert f"error: no VirtualMachine found in namespace {namespace}" in empty.stderr
    missing = resources(control_plane, "--cluster", "--kubeconfig", "/nonexistent/kubeconfig")
    assert missing.returncode == 2
    assert "kubeconfig /nonexistent/kubeconfig: no such file" in missing.stderr
    assert "Traceback" not in missing.stderr


AAQ_GROUP = "aaq.kubevirt.io"


def aaq_crd(kind: str, plural: str, namespaced: bool) -> dict[str, Any]:
    """A stand-in for application-aware-quota's CRD (same group, version, names, scope and status
    subresource; any object accepted): what ``resources --cluster`` reads of it."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{AAQ_GROUP}"},
        "spec": {
            "group": AAQ_GROUP,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


def inline_vm(namespace: str, name: str, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runStrategy": "Halted",
            "template": {"spec": {"domain": {"memory": {"guest": memory}, "devices": {}}}},
        },
    }


def test_application_aware_quotas_of_the_cluster(private_plane: ControlPlane) -> None:
    cluster = private_plane
    cluster.apply(
        aaq_crd("ApplicationAwareResourceQuota", "applicationawareresourcequotas", True),
        aaq_crd("AAQ", "aaqs", False),
    )
    cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    namespace = cluster.new_namespace("aaq")
    cluster.kubectl("label", "namespace", namespace, "application-aware-quota/enable-gating=")
    cluster.apply(
        inline_vm(namespace, "a-small", "1Gi"),
        inline_vm(namespace, "b-large", "3Gi"),
        {
            "apiVersion": f"{AAQ_GROUP}/v1alpha1",
            "kind": "AAQ",
            "metadata": {"name": "aaq"},
            "spec": {
                "configuration": {"vmiCalculatorConfiguration": {"configName": "DedicatedVirtualResources"}}
            },
        },
        {
            "apiVersion": f"{AAQ_GROUP}/v1alpha1",
            "kind": "ApplicationAwareResourceQuota",
            "metadata": {"name": "vm-memory", "namespace": namespace},
            "spec": {"hard": {"requests.memory/vmi": "3Gi"}},
        },
    )
    # AAQ's controller is not running here: its part, the quota's status, written as it would.
    status = {"status": {"hard": {"requests.memory/vmi": "3Gi"}, "used": {"requests.memory/vmi": USED}}}
    cluster.kubectl(
        "patch",
        "applicationawareresourcequotas",
        "vm-memory",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )
    args = ["--cluster", "-n", namespace, "--kubeconfig", str(cluster.admin_kubeconfig)]
    lines = resources(cluster, *args, "-o", "jsonl")
    assert lines.returncode == 1, lines.stderr
    vms = by_name(lines.stdout)
    # The guests' memory is charged (DedicatedVirtualResources, from the AAQ CR), not the pods'.
    assert vms["a-small"]["fits"] is True
    assert vms["b-large"]["fits"] is False and "refusedBy" not in vms["b-large"]
    (reason,) = vms["b-large"]["gatedBy"]
    requested, used, limited = re.fullmatch(
        r"exceeded quota: vm-memory, requested: requests.memory/vmi=(\S+), "
        r"used: requests.memory/vmi=(\S+), limited: requests.memory/vmi=(\S+)",
        reason,
    ).groups()  # type: ignore[union-attr]
    assert parse_quantity(requested).value == parse_quantity("3Gi").value
    # What AAQ counted already (status.used) and the small VM's guest, admitted first.
    assert parse_quantity(used).value == parse_quantity(USED).value + parse_quantity("1Gi").value
    assert limited == "3Gi"
    (ns_line,) = [json.loads(x) for x in lines.stdout.splitlines() if json.loads(x)["kind"] == "Namespace"]
    aaq = ns_line["applicationAwareQuotas"]
    assert aaq["calculator"] == "DedicatedVirtualResources" and aaq["gated"] is True
    text = resources(cluster, *args)
    assert text.returncode == 1
    assert (
        f"{namespace}/b-large would stay gated at start (application-aware quota): exceeded quota: vm-memory"
        in (text.stderr)
    )
    # Without the gating label, AAQ holds nothing back in the namespace.
    cluster.kubectl("label", "namespace", namespace, "application-aware-quota/enable-gating-")
    assert resources(cluster, *args).returncode == 0
