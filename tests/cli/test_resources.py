"""``kubevirt-expand resources``: each VM's virt-launcher pod (KubeVirt's own numbers: the examples family
of the launcher corpus), the namespace's total, and the quota check against ResourceQuota objects in the
inputs: which VMs fit, which would be refused at start and by how much, as text, JSON lines and the
exit code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.cli import main
from apiserver.render.kubernetes.quantity import parse_quantity
from apiserver.render.kubernetes.quantitymath import readable_bytes
from tests.support.launcher import stored_pod

REPO = Path(__file__).parents[2]
EXAMPLES = REPO / "examples"
# KubeVirt's answers for the examples, the pod as kube-apiserver stores it
ANSWERS = {
    c["name"]: stored_pod(c["answer"])
    for c in map(json.loads, (REPO / "tests/render/launcher/cases/examples.jsonl").read_text().splitlines())
}


def quota(name: str, hard: dict[str, str], used: dict[str, str] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"hard": hard},
    }
    if used:
        doc["status"] = {"hard": hard, "used": used}
    return doc


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["resources", *args])
    out, err = capsys.readouterr()
    return code, out, err


def jsonl(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_each_vm_costs_what_kubevirt_computes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(EXAMPLES), "-o", "jsonl")
    assert code == 0
    lines = jsonl(out)
    vms = {line["name"]: line for line in lines if line["kind"] == "VirtualMachine"}
    assert set(vms) == set(ANSWERS)
    for name, answer in ANSWERS.items():
        assert vms[name]["pod"]["total"] == answer["total"]
        assert vms[name]["pod"]["memoryOverhead"] == answer["memoryOverhead"]
        assert vms[name]["fits"] is True
    (namespace,) = [line for line in lines if line["kind"] == "Namespace"]
    total = sum(parse_quantity(a["total"]["requests"]["memory"]).value for a in ANSWERS.values())
    assert parse_quantity(namespace["requests"]["memory"]).value == total
    assert namespace["vms"] == 3 and namespace["quotas"] == []


def test_the_table_names_every_vm_and_the_namespace_total(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(EXAMPLES))
    assert code == 0
    vm_table, ns_table = out.strip().split("\n\n")
    rows = [line.split() for line in vm_table.splitlines()]
    assert rows[0] == [
        "NAMESPACE",
        "NAME",
        "CPU-REQUEST",
        "MEMORY-REQUEST",
        "CPU-LIMIT",
        "MEMORY-LIMIT",
        "FITS",
    ]
    for row in rows[1:]:
        requests = ANSWERS[row[1]]["total"]["requests"]
        # the compute container sets no CPU or memory limit: the pod has none; memory in binary units
        assert row[2:] == [requests["cpu"], readable_bytes(requests["memory"]), "none", "none", "yes"]
    assert [row[3] for row in rows[1:]] == ["1346Mi", "2378Mi", "1346Mi"]  # 1410731712 bytes, ...
    assert ns_table.splitlines()[1].split()[:2] == ["default", "3"]


def test_a_quota_too_small_refuses_the_vm_that_passes_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    memory = sorted(parse_quantity(a["total"]["requests"]["memory"]).value for a in ANSWERS.values())
    # room for the two smallest pods, not for the third
    limit = memory[0] + memory[1] + memory[2] // 2
    folder = tmp_path / "in"
    shutil.copytree(EXAMPLES, folder)
    (folder / "quota.yaml").write_text(yaml.safe_dump(quota("team", {"requests.memory": str(limit)})))
    code, out, err = run(capsys, "-f", str(folder), "-o", "jsonl")
    assert code == 1
    vms = [line for line in jsonl(out) if line["kind"] == "VirtualMachine"]
    refused = [v for v in vms if not v["fits"]]
    assert len(refused) == 1
    (reason,) = refused[0]["refusedBy"]
    assert reason.startswith("exceeded quota: team, requested: requests.memory=")
    assert f"limited: requests.memory={limit}" in reason
    # the text output says the same on stderr, naming the VM
    code, _, err = run(capsys, "-f", str(folder))
    assert code == 1
    assert f"default/{refused[0]['name']} would be refused at start: exceeded quota: team" in err


def test_usage_already_counted_by_the_quota_is_taken_into_account(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    shutil.copytree(EXAMPLES, folder)
    (folder / "quota.yaml").write_text(yaml.safe_dump(quota("pods", {"pods": "5"}, used={"pods": "3"})))
    code, out, _ = run(capsys, "-f", str(folder), "-o", "jsonl")
    assert code == 1
    fits = [v["fits"] for v in jsonl(out) if v["kind"] == "VirtualMachine"]
    assert fits == [True, True, False]


def test_a_limits_quota_sets_memory_limits_and_asks_for_cpu_limits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    shutil.copytree(EXAMPLES, folder)
    (folder / "quota.yaml").write_text(
        yaml.safe_dump(quota("limits", {"limits.memory": "100Gi", "limits.cpu": "10"}))
    )
    code, out, _ = run(capsys, "-f", str(folder), "-o", "jsonl")
    vms = [v for v in jsonl(out) if v["kind"] == "VirtualMachine"]
    for v in vms:
        compute = v["pod"]["containers"][0]["resources"]
        # AutoResourceLimits: KubeVirt sets the limits the quota asks for (memory: 2x the request)
        assert (
            parse_quantity(compute["limits"]["memory"]).value
            == 2 * parse_quantity(compute["requests"]["memory"]).value
        )
        assert "cpu" in compute["limits"]
    assert code == 0, [v.get("refusedBy") for v in vms]


def test_unusable_input_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n")
    code, _, err = run(capsys, "-f", str(tmp_path))
    assert code == 2 and "no VirtualMachine or VirtualMachineInstance found" in err


def _examples_list(*extra: dict[str, Any]) -> str:
    """The examples as ``kubectl get -o yaml`` prints objects: one List document."""
    items = [d for f in sorted(EXAMPLES.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [*items, *extra]})


def test_a_list_on_stdin_is_read_as_kubectl_prints_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    pods = quota("pods", {"pods": "2"})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_examples_list(pods).encode())))
    code, out, _ = run(capsys, "-o", "jsonl", "-")  # `-` as an argument, as -f
    assert code == 1
    vms = [v for v in jsonl(out) if v["kind"] == "VirtualMachine"]
    assert sorted(v["name"] for v in vms) == sorted(ANSWERS)
    assert [v["fits"] for v in vms] == [True, True, False]
    assert vms[2]["refusedBy"] == ["exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2"]


def test_a_running_vm_is_not_admitted_twice(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(EXAMPLES, folder)
    # The quota controller counts the running VM's pod in status.used: it is not counted again.
    (folder / "quota.yaml").write_text(yaml.safe_dump(quota("pods", {"pods": "3"}, used={"pods": "1"})))
    first = folder / "vm-fedora.yaml"
    docs = [d for d in yaml.safe_load_all(first.read_text()) if d]
    vm = next(d for d in docs if d["kind"] == "VirtualMachine")
    vm["status"] = {"created": True, "ready": True}
    first.write_text(yaml.safe_dump_all(docs))
    code, out, err = run(capsys, "-f", str(folder))
    assert code == 0, err
    table = out.split("\n\n")[0]
    row = next(line.split() for line in table.splitlines() if line.split()[1] == vm["metadata"]["name"])
    assert row[-1] == "running"
    assert "would be refused" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give either -f FILE|DIR|- or --cluster"),
        (("-f", str(EXAMPLES), "--cluster"), "give either -f FILE|DIR|- or --cluster"),
        (("-f", str(EXAMPLES), "-A"), "-A/--all-namespaces reads a cluster: give --cluster"),
        (("--cluster", "-A", "-n", "x"), "-A/--all-namespaces and -n/--namespace exclude each other"),
    ],
)
def test_where_the_vms_come_from_is_said_once(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err == f"error: {message}\n"


def arq(name: str, hard: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "aaq.kubevirt.io/v1alpha1",
        "kind": "ApplicationAwareResourceQuota",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"hard": hard},
    }


def aaq_cr(calculator: str) -> dict[str, Any]:
    return {
        "apiVersion": "aaq.kubevirt.io/v1alpha1",
        "kind": "AAQ",
        "metadata": {"name": "aaq"},
        "spec": {"configuration": {"vmiCalculatorConfiguration": {"configName": calculator}}},
    }


def gated_namespace(**labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": labels}}


def test_an_application_aware_quota_charges_the_guest_and_holds_the_pod_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    shutil.copytree(EXAMPLES, folder)
    guests = [parse_quantity(a["vmi"]["spec.domain.memory"]["guest"]).value for a in ANSWERS.values()]
    # Room for every guest but one byte (not for their pods: DedicatedVirtualResources charges the
    # guest only): the VM admitted last is held back.
    limit = int(sum(guests)) - 1
    (folder / "aaq.yaml").write_text(
        yaml.safe_dump_all(
            [
                arq("vm-memory", {"requests.memory/vmi": str(limit)}),
                aaq_cr("DedicatedVirtualResources"),
                gated_namespace(**{"application-aware-quota/enable-gating": ""}),
            ]
        )
    )
    code, out, _ = run(capsys, "-f", str(folder), "-o", "jsonl")
    assert code == 1
    lines = jsonl(out)
    vms = [v for v in lines if v["kind"] == "VirtualMachine"]
    assert [v["fits"] for v in vms] == [True, True, False]
    assert "refusedBy" not in vms[2]
    (reason,) = vms[2]["gatedBy"]
    assert reason.startswith("exceeded quota: vm-memory, requested: requests.memory/vmi=")
    assert reason.endswith(f"limited: requests.memory/vmi={limit}")
    (ns,) = [line for line in lines if line["kind"] == "Namespace"]
    assert ns["applicationAwareQuotas"]["calculator"] == "DedicatedVirtualResources"
    assert ns["applicationAwareQuotas"]["gated"] is True
    assert ns["applicationAwareQuotas"]["quotas"][0]["name"] == "vm-memory"

    # The text says it on stderr, and lists the quota in the namespace's row.
    code, out, err = run(capsys, "-f", str(folder))
    assert code == 1
    assert f"default/{vms[2]['name']} would stay gated at start (application-aware quota): {reason}" in err
    assert "vm-memory(aaq)" in out

    # --aaq-calculator overrides the CR: VmiPodUsage charges no requests.memory/vmi, so all fit.
    code, _, err = run(capsys, "-f", str(folder), "--aaq-calculator", "VmiPodUsage")
    assert code == 0, err

    # A namespace AAQ does not gate holds nothing back.
    (folder / "aaq.yaml").write_text(
        yaml.safe_dump_all(
            [
                arq("vm-memory", {"requests.memory/vmi": str(limit)}),
                aaq_cr("DedicatedVirtualResources"),
                gated_namespace(),
            ]
        )
    )
    code, out, err = run(capsys, "-f", str(folder), "-o", "jsonl")
    assert code == 0, err
    (ns,) = [line for line in jsonl(out) if line["kind"] == "Namespace"]
    assert ns["applicationAwareQuotas"]["gated"] is False


# the compute container's device limits (KVM, the pod network's tun and vhost-net), which kube-apiserver's
# SetDefaults_Pod makes requests too
DEVICES = {
    "devices.kubevirt.io/kvm": "1",
    "devices.kubevirt.io/tun": "1",
    "devices.kubevirt.io/vhost-net": "1",
}


def test_a_standalone_vmi_is_judged_and_its_claims_must_be_given(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Figures from expand-launcher (KubeVirt d923fdb) for the same VMI, as kube-apiserver stores the pod
    (SetDefaults_Pod: the device limits are requests too)."""
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "lone"},
        "spec": {
            "domain": {
                "cpu": {"cores": 2},
                "memory": {"guest": "2Gi"},
                "devices": {"disks": [{"name": "d", "disk": {}}]},
            },
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    owned = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {
            "name": "of-a-vm",
            "ownerReferences": [{"kind": "VirtualMachine", "name": "x", "uid": "u"}],
        },
        "spec": {"domain": {"memory": {"guest": "1Gi"}}},
    }
    (tmp_path / "vmi.yaml").write_text(yaml.safe_dump_all([vmi, owned]))
    code, out, _ = run(capsys, "-f", str(tmp_path))
    assert code == 1
    assert "vmi/lone" in out and "didn't find PVC data" in out and "of-a-vm" not in out
    code, out, _ = run(capsys, "-f", str(tmp_path), "--assume-pvcs", "-o", "jsonl")
    assert code == 0
    (line,) = [v for v in jsonl(out) if v["kind"] == "VirtualMachineInstance"]
    assert line["name"] == "lone" and line["fits"] is True
    assert line["pod"]["total"]["requests"] == {
        "cpu": "205m",
        "ephemeral-storage": "50M",
        "memory": "2492862144",
        **DEVICES,
    }
    assert any("PVC default/data" in a for a in line["assumed"])
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {}}
    (tmp_path / "pvc.yaml").write_text(yaml.safe_dump(pvc))
    code, out, _ = run(capsys, "-f", str(tmp_path), "-o", "jsonl")
    assert code == 0 and not any("PVC" in a for v in jsonl(out) for a in v.get("assumed", ()))


def test_nads_among_the_inputs_are_read_with_the_gate_disabled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    template = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "multus", "namespace": "default"},
        "spec": {
            "runStrategy": "Always",
            "template": {
                "spec": {
                    "domain": {
                        "cpu": {"cores": 1},
                        "memory": {"guest": "1Gi"},
                        "devices": {
                            "interfaces": [
                                {"name": "default", "masquerade": {}},
                                {"name": "sec", "bridge": {}},
                            ]
                        },
                    },
                    "networks": [
                        {"name": "default", "pod": {}},
                        {"name": "sec", "multus": {"networkName": "nad0"}},
                    ],
                }
            },
        },
    }
    kubevirt = {"developerConfiguration": {"disabledFeatureGates": ["ExternalNetResourceInjection"]}}
    (tmp_path / "kv.yaml").write_text(yaml.safe_dump(kubevirt))
    (tmp_path / "vms").mkdir()
    (tmp_path / "vms" / "vm.yaml").write_text(yaml.safe_dump(template))
    code, out, _ = run(
        capsys, "-f", str(tmp_path / "vms"), "--kubevirt", str(tmp_path / "kv.yaml"), "-o", "jsonl"
    )
    assert code == 1
    (line,) = [v for v in jsonl(out) if v["kind"] == "VirtualMachine"]
    assert line["status"]["message"].endswith("failed to locate network attachment definition default/nad0")
    nad = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "nad0", "annotations": {"k8s.v1.cni.cncf.io/resourceName": "intel.com/sriov"}},
    }
    (tmp_path / "vms" / "nad.yaml").write_text(yaml.safe_dump(nad))
    code, out, _ = run(
        capsys, "-f", str(tmp_path / "vms"), "--kubevirt", str(tmp_path / "kv.yaml"), "-o", "jsonl"
    )
    assert code == 0
    (line,) = [v for v in jsonl(out) if v["kind"] == "VirtualMachine"]
    # expand-launcher's figures, as kube-apiserver stores the pod
    assert line["pod"]["total"]["requests"] == {
        "cpu": "105m",
        "ephemeral-storage": "50M",
        "intel.com/sriov": "1",
        "memory": "1410731712",
        **DEVICES,
    }


def test_a_quota_on_kvm_devices_counts_the_requests_kube_apiserver_defaults_from_limits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # virt-controller asks for devices.kubevirt.io/kvm as a limit only; kube-apiserver's SetDefaults_Pod
    # makes it a request too, and quota admission charges requests.devices.kubevirt.io/kvm by it.
    folder = tmp_path / "in"
    shutil.copytree(EXAMPLES, folder)
    hard = {"requests.devices.kubevirt.io/kvm": "2"}
    (folder / "quota.yaml").write_text(yaml.safe_dump(quota("kvm", hard)))
    code, out, _ = run(capsys, "-f", str(folder), "-o", "jsonl")
    assert code == 1
    vms = [v for v in jsonl(out) if v["kind"] == "VirtualMachine"]
    assert [v["fits"] for v in vms] == [True, True, False]
    assert all(v["pod"]["total"]["requests"]["devices.kubevirt.io/kvm"] == "1" for v in vms)
    (reason,) = vms[2]["refusedBy"]
    assert reason == (
        "exceeded quota: kvm, requested: requests.devices.kubevirt.io/kvm=1, "
        "used: requests.devices.kubevirt.io/kvm=2, limited: requests.devices.kubevirt.io/kvm=2"
    )
