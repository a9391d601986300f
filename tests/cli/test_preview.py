"""``kubevirt-expand preview``: a folder of manifests against another, per VM the rendered change and
KubeVirt's verdict, with exit codes and ``-o jsonl``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from apiserver.cli import main
from tests.support.http_helpers import EXAMPLES


def _after(tmp_path: Path) -> Path:
    after = tmp_path / "after"
    shutil.copytree(EXAMPLES, after)
    return after


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _instancetype(folder: Path, name: str, cpus: int, memory: str) -> None:
    doc = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}},
    }
    (folder / f"it-{name}.yaml").write_text(yaml.safe_dump(doc))


def _switch(folder: Path, size: str) -> None:
    _edit(
        folder / "vm-fedora.yaml",
        "kind: VirtualMachineInstancetype\n    name: cmedium",
        f"kind: VirtualMachineInstancetype\n    name: {size}",
    )


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["preview", "--before", str(EXAMPLES), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_unchanged_folders_change_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--after", str(_after(tmp_path)))
    assert code == 0
    assert out.splitlines() == [
        "default/fedora: unchanged",
        "default/fedora-cluster: unchanged",
        "default/fedora-pinned: unchanged",
    ]
    assert err.startswith("3 VMs: 3 unchanged (")


def test_a_bigger_instancetype_within_the_limits_is_live(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    after = _after(tmp_path)
    _instancetype(after, "clarge", 2, "4Gi")
    _switch(after, "clarge")
    code, out, _ = run(capsys, "--after", str(after))
    assert code == 0
    assert out.splitlines()[:3] == [
        "default/fedora: live",
        "  /spec/template/spec/domain/cpu/sockets: 1 -> 2",
        '  /spec/template/spec/domain/memory/guest: "1Gi" -> "4Gi"',
    ]


def test_beyond_max_sockets_restarts_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    after = _after(tmp_path)
    _instancetype(after, "chuge", 8, "4Gi")  # 8 sockets; the running VM (1 socket) allows 4
    _switch(after, "chuge")
    code, out, err = run(capsys, "--after", str(after), "-o", "jsonl")
    assert code == 1
    lines = [json.loads(line) for line in out.splitlines()]
    fedora = next(e for e in lines if e["name"] == "fedora")
    assert fedora["verdict"] == "restart"
    assert fedora["message"] == "CPU sockets updated in template spec to a value higher than what's available"
    assert {"op": "replace", "path": "/spec/template/spec/domain/cpu/sockets", "value": 8} in fedora["patch"]
    assert [e["verdict"] for e in lines if e["name"] != "fedora"] == ["unchanged", "unchanged"]
    assert "1 restart" in err


def test_an_edited_instancetype_changes_no_running_vm_unless_upgraded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    after = _after(tmp_path)
    _edit(
        after / "instancetypes.yaml",
        "  cpu:\n    guest: 1\n  memory:\n    guest: 1Gi\n---",
        "  cpu:\n    guest: 1\n  memory:\n    guest: 3Gi\n---",
    )
    code, out, _ = run(capsys, "--after", str(after))
    assert (code, out.splitlines()[0]) == (0, "default/fedora: unchanged")
    code, out, _ = run(capsys, "--after", str(after), "--upgrade")
    assert out.splitlines()[:2] == [
        "default/fedora: live",
        '  /spec/template/spec/domain/memory/guest: "1Gi" -> "3Gi"',
    ]


def test_the_stage_strategy_restarts_every_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    after = _after(tmp_path)
    _instancetype(after, "clarge", 2, "4Gi")
    _switch(after, "clarge")
    _edit(after / "kubevirt.yaml", "  configuration:\n", "  configuration:\n    vmRolloutStrategy: Stage\n")
    code, out, _ = run(capsys, "--after", str(after))
    assert code == 1
    assert (
        out.splitlines()[0]
        == "default/fedora: restart (a non-live-updatable field was changed in the template spec)"
    )


def test_added_removed_and_stopped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    after = _after(tmp_path)
    (after / "vm-fedora-cluster.yaml").unlink()
    _edit(after / "vm-fedora.yaml", "  name: fedora\n", "  name: fedora-2\n")
    pinned = after / "vm-fedora-pinned.yaml"
    pinned.write_text(
        pinned.read_text().replace("      domain:\n", "      hostname: other\n      domain:\n", 1)
    )
    code, out, _ = run(capsys, "--after", str(after), "--stopped")
    assert code == 0
    assert out.splitlines() == [
        "default/fedora: removed",
        "default/fedora-2: added",
        "default/fedora-cluster: removed",
        "default/fedora-pinned: stopped",
        '  /spec/template/spec/hostname: (none) -> "other"',
    ]


def test_unusable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "vm.yaml").write_text("kind: [")
    code, _, err = run(capsys, "--after", str(broken))
    assert code == 2
    assert "error:" in err
