"""``kubevirt-expand preview --catalog-before A --catalog-after B -f FLEET`` on small catalogs of files: what
the reviewer of a catalog change reads. What KubeVirt itself does with such a change is checked against its
own control plane in tests/kubevirt/test_catalog_upgrade.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.cli import main

IT = "instancetype.kubevirt.io/v1beta1"


def _catalog(folder: Path, *, arch: str | None, label: str) -> Path:
    folder.mkdir()
    requirements: dict[str, Any] = {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}}
    if arch:
        requirements["architecture"] = arch
    docs = [
        {
            "apiVersion": IT,
            "kind": "VirtualMachineClusterInstancetype",
            "metadata": {"name": "u1.small", "labels": {"release": label}},
            "spec": {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}},
        },
        {
            "apiVersion": IT,
            "kind": "VirtualMachineClusterPreference",
            "metadata": {"name": "fedora", "labels": {"release": label}},
            "spec": {"devices": {"preferredDiskBus": "virtio"}, "requirements": requirements},
        },
    ]
    (folder / "catalog.yaml").write_text(yaml.safe_dump_all(docs))
    return folder


def _vm(name: str, *, preference: bool, arch: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"domain": {"devices": {}}}
    if arch:
        spec["architecture"] = arch
    vm: dict[str, Any] = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"runStrategy": "Always", "instancetype": {"name": "u1.small"}, "template": {"spec": spec}},
    }
    if preference:
        vm["spec"]["preference"] = {"name": "fedora"}
    return vm


@pytest.fixture
def change(tmp_path: Path) -> list[str]:
    before = _catalog(tmp_path / "before", arch=None, label="v1")
    after = _catalog(tmp_path / "after", arch="amd64", label="v2")  # u1.small: its label alone
    fleet = tmp_path / "fleet.yaml"
    vms = [
        _vm("web", preference=True),
        _vm("armvm", preference=True, arch="arm64"),
        _vm("plain", preference=False),
    ]
    fleet.write_text(yaml.safe_dump_all(vms))
    return ["preview", "--catalog-before", str(before), "--catalog-after", str(after), "-f", str(fleet)]


def test_a_label_only_edit_changes_no_vm_and_a_refused_vm_says_how_it_is_upgraded(
    change: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """u1.small's label alone changed: its VMs are unaffected (KubeVirt's revision keeps no label, and the
    object no new generation). The arm64 VM on a preference now amd64-only is refused, yet upgraded all the
    same (through its status, which the webhook does not see)."""
    code = main(change)
    out, err = capsys.readouterr()
    assert code == 1
    assert out.splitlines() == [
        "edited: VirtualMachineClusterPreference fedora",
        "team-a/armvm: refused (admission webhook would deny the VirtualMachine: failure checking preference "
        "requirements: preference requires architecture amd64 but arm64 is being requested)",
        "  upgraded all the same (its status): unchanged",
        "team-a/web: unchanged",
        "namespace team-a: 2 of 3 VMs affected; requests no change",
    ]
    assert err.startswith("catalog change: objects 1 edited; 3 VMs: 1 refused, 1 unaffected, 1 unchanged (")


def test_json_gives_the_refused_vms_upgrade(change: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*change, "-o", "json"]) == 1
    items = {e["name"]: e for e in json.loads(capsys.readouterr().out)["items"]}
    assert {name: e["verdict"] for name, e in items.items()} == {
        "armvm": "refused",
        "plain": "unaffected",
        "web": "unchanged",
    }
    assert items["armvm"]["upgrade"] == {"verdict": "unchanged", "patch": [], "changes": []}
    assert items["armvm"]["refusal"]["details"]["causes"][0]["field"] == "spec.template.spec.architecture"
