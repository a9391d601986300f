"""``kubevirt-expand resources`` outcomes as ``expand`` names them: a VM naming an instancetype or
preference that was not given is unresolved (exit 3, said as such in every format), not a refusal
(exit 1); a refusal among them still exits 1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_resources import EXAMPLES, jsonl, run


def lost_vm(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "runStrategy": "Halted",
            "template": {"spec": {"domain": {"devices": {}}}},
            **spec,
        },
    }


def folder(tmp_path: Path, *vms: dict[str, Any]) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "vms")
    for vm in vms:
        (tmp_path / "vms" / f"zz-{vm['metadata']['name']}.json").write_text(json.dumps(vm))
    return tmp_path / "vms"


MISSING_INSTANCETYPE = lost_vm("lost", instancetype={"name": "u1.nothere"})
MISSING_PREFERENCE = lost_vm("nopref", preference={"name": "fedoraa"})


def test_a_missing_instancetype_is_unresolved_exit_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    vms = folder(tmp_path, MISSING_INSTANCETYPE, MISSING_PREFERENCE)
    code, out, err = run(capsys, "-f", str(vms))
    assert code == 3, err
    rows = {line.split()[1]: line for line in out.splitlines()[1:] if line.startswith("default ")}
    assert " unresolved: virtualmachineclusterinstancetypes.instancetype.kubevirt.io " in rows["lost"]
    assert " unresolved: virtualmachineclusterpreferences.instancetype.kubevirt.io " in rows["nopref"]
    assert rows["fedora"].endswith(" yes")
    assert err.splitlines() == [
        "note: 2 VMs are unresolved: they name an instancetype, preference or ControllerRevision not found "
        "in the inputs; its pod cannot be computed until it is given (kubevirt-expand catalog snapshot "
        "writes the cluster's)"
    ]

    code, out, _ = run(capsys, "-f", str(vms), "-o", "jsonl")
    assert code == 3
    lines = {line["name"]: line for line in jsonl(out) if line["kind"] == "VirtualMachine"}
    assert lines["lost"]["unresolved"] is True
    assert lines["lost"]["status"]["details"]["causes"][0]["field"] == "spec.instancetype.name"
    assert "unresolved" not in lines["fedora"]


def test_a_refusal_beside_an_unresolved_vm_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    refused = lost_vm(
        "conflict",
        instancetype={"kind": "VirtualMachineInstancetype", "name": "cmedium"},
        template={"spec": {"domain": {"devices": {}, "cpu": {"sockets": 2}}}},
    )
    vms = folder(tmp_path, MISSING_INSTANCETYPE, refused)
    code, out, _ = run(capsys, "-f", str(vms), "-o", "jsonl")
    assert code == 1
    lines = {line["name"]: line for line in jsonl(out) if line["kind"] == "VirtualMachine"}
    assert "unresolved" not in lines["conflict"] and lines["conflict"]["status"]["code"] == 422
    assert lines["lost"]["unresolved"] is True
