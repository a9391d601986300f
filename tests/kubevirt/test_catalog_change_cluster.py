"""``kubevirt-expand preview --cluster --catalog-after`` on KubeVirt's own control plane: the fleet read as
it runs (the revisions virt-controller captured, not the live objects), an instancetype edit previewed
before it is applied, then applied and each VM upgraded as KubeVirt takes an upgrade (its revision
reference dropped from its status): what KubeVirt did equals what the preview said, VM by VM.

A VM that is stale already (its instancetype edited after it started) is previewed from its captured
revision: its verdict tells what the upgrade does to the VM as it runs.

The session's control plane with KubeVirt (tests/kubevirt/conftest.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from devcluster import kubevirt
from devcluster.controlplane import ControlPlane, poll
from tests.cli.test_expand_gate import COMMAND

NS = "catalog-change"
RESTART_MESSAGE = "a non-live-updatable field was changed in the template spec"


def _instancetype(name: str, memory: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"cpu": {"guest": 1}, "memory": {"guest": memory}, **spec},
    }


def _vm(name: str, instancetype: str, run_strategy: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "runStrategy": run_strategy,
            "instancetype": {"kind": "VirtualMachineInstancetype", "name": instancetype},
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [
                        {"name": "disk", "containerDisk": {"image": "quay.io/containerdisks/fedora:41"}}
                    ],
                }
            },
        },
    }


def _get_vm(cluster: ControlPlane, name: str) -> dict[str, Any]:
    out = cluster.kubectl("get", "vm", name, "-n", NS, "-o", "json")
    return dict(json.loads(out.stdout))


def _captured(cluster: ControlPlane, name: str) -> str:
    vm = poll(
        f"virt-controller captures the instancetype of {name}",
        lambda: _get_vm(cluster, name),
        lambda v: bool(((v.get("status") or {}).get("instancetypeRef") or {}).get("controllerRevisionRef")),
        timeout=30,
    )
    return str(vm["status"]["instancetypeRef"]["controllerRevisionRef"]["name"])


def _preview(cluster: ControlPlane, proposed: Path) -> tuple[int, dict[str, Any], str]:
    result = subprocess.run(
        [
            *COMMAND,
            "preview",
            "--cluster",
            "-n",
            NS,
            "--catalog-after",
            str(proposed),
            "-o",
            "json",
            "--kubeconfig",
            str(cluster.admin_kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout), result.stderr


def _restart_required(vm: dict[str, Any]) -> str | None:
    for condition in (vm.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "RestartRequired" and condition.get("status") == "True":
            return str(condition.get("message") or "")
    return None


def test_an_instancetype_edit_previewed_from_the_cluster_is_what_kubevirt_does(
    kv_cluster: ControlPlane, plane: kubevirt.KubeVirtPlane, tmp_path: Path
) -> None:
    cluster = kv_cluster
    cluster.kubectl("create", "namespace", NS)
    cluster.kubectl("create", "serviceaccount", "default", "-n", NS)  # no controller-manager makes it
    cluster.apply(_instancetype("team", "1Gi"))
    cluster.apply(_instancetype("keep", "1Gi"))
    for name, it, strategy in (
        ("runs", "team", "Always"),
        ("halted", "team", "Halted"),
        ("other", "keep", "Always"),
        ("stale", "keep", "Always"),
    ):
        cluster.apply(_vm(name, it, strategy))
    captured = {name: _captured(cluster, name) for name in ("runs", "halted", "other", "stale")}
    # ``stale`` runs from its captured revision of ``keep``; the live ``keep`` changes afterwards: the
    # preview must start from the revision (1Gi), not the live object (2Gi).
    cluster.kubectl(
        "patch", "virtualmachineinstancetype", "keep", "-n", NS, "--type=merge",
        "-p", '{"spec":{"memory":{"guest":"2Gi"}}}',
    )  # fmt: skip

    proposed = tmp_path / "proposed.yaml"
    # not live-updatable: every running VM on ``team`` needs a restart once upgraded
    proposed.write_text(yaml.safe_dump(_instancetype("team", "2Gi", ioThreadsPolicy="auto")))
    code, answer, err = _preview(cluster, proposed)
    verdicts = {e["name"]: e for e in answer["items"]}
    assert {n: e["verdict"] for n, e in verdicts.items()} == {
        "runs": "restart",
        "halted": "stopped",
        "other": "unaffected",
        "stale": "unaffected",  # keep is not part of the change: its drift is the collection's to show
    }, err
    assert verdicts["runs"]["message"] == RESTART_MESSAGE
    assert code == 1 and "catalog change: objects 1 edited; 4 VMs: " in err
    assert {"path": "/spec/template/spec/domain/memory/guest", "old": "1Gi", "new": "2Gi"} in (
        verdicts["runs"]["changes"]
    )

    # The same change to ``keep`` previewed: ``stale`` starts from its revision (1Gi), so its upgrade
    # changes the guest memory from 1Gi (what it runs) to 4Gi, not from the live object's 2Gi.
    proposed.write_text(yaml.safe_dump(_instancetype("keep", "4Gi")))
    _, answer, err = _preview(cluster, proposed)
    stale = {e["name"]: e for e in answer["items"]}["stale"]
    assert {"path": "/spec/template/spec/domain/memory/guest", "old": "1Gi", "new": "4Gi"} in stale[
        "changes"
    ], err

    # Applied, and ``runs`` upgraded as KubeVirt takes an upgrade: its captured revision dropped.
    cluster.apply(_instancetype("team", "2Gi", ioThreadsPolicy="auto"))
    for name in ("runs", "halted"):
        cluster.kubectl(
            "patch", "vm", name, "-n", NS, "--subresource=status", "--type=json",
            "-p", '[{"op":"remove","path":"/status/instancetypeRef/controllerRevisionRef"}]',
        )  # fmt: skip
    for name in ("runs", "halted"):
        poll(
            f"virt-controller captures the new revision of {name}",
            lambda name=name: _get_vm(cluster, name),  # type: ignore[misc]
            lambda v, name=name: (
                (  # type: ignore[misc]
                    ((v.get("status") or {}).get("instancetypeRef") or {}).get("controllerRevisionRef") or {}
                ).get("name")
                not in (None, captured[name])
            ),
            timeout=30,
        )
    runs = poll(
        "KubeVirt sets RestartRequired on the running VM",
        lambda: _get_vm(cluster, "runs"),
        lambda v: _restart_required(v) is not None,
        timeout=30,
    )
    assert _restart_required(runs) == verdicts["runs"]["message"]
    assert _restart_required(_get_vm(cluster, "halted")) is None  # stopped: applies at its next start
    assert _restart_required(_get_vm(cluster, "other")) is None
