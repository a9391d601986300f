"""Under ``--validate`` (KubeVirt's VM webhook: the docs' CI command) every cause has the field and the line it
has without it, in every report: ``-o jsonl``, JUnit, SARIF and Code Quality.

The webhook words its schema refusals without a field (``spec.template.spec.domain.devices.disks.disk.buss
in body is a forbidden property``, as KubeVirt does; the Status keeps its words) and its decode failure
without a cause; the report's causes are given the field each is about, found in the VM as sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from tests.cli.test_expand_gate import EXAMPLES, cli

VM = """\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: {name}
spec:
  runStrategy: Halted
  instancetype:
    kind: VirtualMachineInstancetype
    name: {instancetype}
  template:
    spec:
      domain:
{domain}
      volumes:
      - name: a
        containerDisk: {{image: x}}
      - name: b
        containerDisk: {{image: x}}
"""
DISKS = """\
        devices:
          disks:
          - name: a
            disk: {{bus: virtio}}
          - name: b
            disk: {{{b}}}
"""
# One kind of breakage per file: (file, name, instancetype, domain).
BROKEN = [
    # unknown fields in a list item other than the first, and beside a known one
    ("typo.yaml", "typo", "cmedium", DISKS.format(b="buss: virtio") + "        cpu: {dedicated: true}\n"),
    # a value of the wrong type
    (
        "badtype.yaml",
        "badtype",
        "cmedium",
        "        cpu:\n          cores: two\n" + DISKS.format(b="bus: virtio"),
    ),
    # a value KubeVirt refuses: the instancetype sets the sockets
    (
        "conflict.yaml",
        "conflict",
        "cmedium",
        "        cpu:\n          sockets: 2\n" + DISKS.format(b="bus: virtio"),
    ),
    # an instancetype that is not there
    ("missing.yaml", "missing", "nosuch", DISKS.format(b="bus: virtio")),
    # Go cannot decode it (disk b's bootOrder 1.0 for an unsigned integer, added below); the schema takes it
    ("float.yaml", "float", "cmedium", DISKS.format(b="bus: virtio")),
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    vms = tmp_path / "vms"
    vms.mkdir()
    (vms / "instancetypes.yaml").write_text((EXAMPLES / "instancetypes.yaml").read_text())
    for file, name, instancetype, domain in BROKEN:
        text = VM.format(name=name, instancetype=instancetype, domain=domain.rstrip("\n"))
        if name == "float":
            text = text.replace("- name: b\n", "- name: b\n            bootOrder: 1.0\n", 1)
        (vms / file).write_text(text)
    # Refused by the webhook alone, at a nested field: a disk without its volume.
    nested = VM.format(name="nested", instancetype="cmedium", domain=DISKS.format(b="bus: virtio").rstrip())
    (vms / "nested.yaml").write_text(
        nested.replace("      - name: b\n        containerDisk: {image: x}\n", "")
    )
    return tmp_path


def line_of(path: Path, needle: str, after: str = "") -> int:
    text = path.read_text()
    start = text.index(after) if after else 0
    return text.count("\n", 0, text.index(needle, start)) + 1


def located(proc: Any) -> dict[str, set[tuple[str, str, int]]]:
    """Each VM's causes as (file, field, line), from the jsonl report."""
    out: dict[str, set[tuple[str, str, int]]] = {}
    for line in proc.stdout.splitlines():
        result = json.loads(line)
        out[result["name"]] = {(result["file"], c["field"], c["line"]) for c in result["causes"]}
    return out


LEVELS = ["Strict", "Warn"]


@pytest.mark.parametrize("level", LEVELS)
def test_every_cause_without_validate_is_there_with_it(repo: Path, level: str) -> None:
    args = ["-f", "vms/", "--check", "-o", "jsonl", "--field-validation", level]
    without = located(cli(*args, cwd=repo))
    with_validate = located(cli(*args, "--validate", cwd=repo))
    vms = repo / "vms"
    disks_b = "spec.template.spec.domain.devices.disks[1]"
    typo = {
        ("vms/typo.yaml", f"{disks_b}.disk.buss", line_of(vms / "typo.yaml", "buss")),
        ("vms/typo.yaml", "spec.template.spec.domain.cpu.dedicated", line_of(vms / "typo.yaml", "dedicated")),
    }
    expected = {
        "badtype": {
            (
                "vms/badtype.yaml",
                "spec.template.spec.domain.cpu.cores",
                line_of(vms / "badtype.yaml", "cores"),
            )
        },
        "conflict": {
            (
                "vms/conflict.yaml",
                "spec.template.spec.domain.cpu.sockets",
                line_of(vms / "conflict.yaml", "sockets"),
            )
        },
        "missing": {("vms/missing.yaml", "spec.instancetype.name", line_of(vms / "missing.yaml", "nosuch"))},
        "float": {("vms/float.yaml", f"{disks_b}.bootOrder", line_of(vms / "float.yaml", "bootOrder"))},
        "nested": set(),  # admitted without the webhook
    }
    if level == "Strict":
        expected["typo"] = typo
    else:
        expected["typo"] = set()  # warnings only
    assert without == expected
    # The webhook refuses what the rendering refused, and more; each cause keeps its field and line.
    for name, causes in without.items():
        assert causes <= with_validate[name], name
    assert with_validate["typo"] == typo
    nested = repo / "vms" / "nested.yaml"
    assert with_validate["nested"] == {("vms/nested.yaml", f"{disks_b}.name", line_of(nested, "name: b"))}
    for name, causes in with_validate.items():
        assert all(field and line for _, field, line in causes), (name, causes)


def test_the_status_keeps_kubevirts_words(repo: Path) -> None:
    """The report's cause has the field; the Status is KubeVirt's answer, its schema causes message-only."""
    proc = cli("-f", "vms/typo.yaml", "-f", "vms/instancetypes.yaml", "--validate", "-o", "jsonl", cwd=repo)
    (result,) = [json.loads(line) for line in proc.stdout.splitlines()]
    buss = "spec.template.spec.domain.devices.disks.disk.buss in body is a forbidden property"
    assert {"reason": "", "message": buss, "field": ""} in result["status"]["details"]["causes"]
    assert {
        "reason": "FieldValueUnknownField",
        "message": buss,
        "field": "spec.template.spec.domain.devices.disks[1].disk.buss",
        "line": line_of(repo / "vms" / "typo.yaml", "buss"),
    } in result["causes"]


def test_ci_reports_point_at_the_field_under_validate(repo: Path) -> None:
    proc = cli(
        "-f",
        "vms/",
        "--validate",
        "--check",
        "-o",
        "jsonl",
        "--report",
        "sarif=out.sarif",
        "--report",
        "codequality=out.json",
        "--report",
        "junit=out.xml",
        cwd=repo,
    )
    causes = {
        (r["file"], c["line"], c["message"])
        for line in proc.stdout.splitlines()
        for r in [json.loads(line)]
        for c in r["causes"]
    }
    fields = {
        (r["file"], c["line"], c["field"])
        for line in proc.stdout.splitlines()
        for r in [json.loads(line)]
        for c in r["causes"]
    }
    sarif = json.loads((repo / "out.sarif").read_text())["runs"][0]["results"]
    got = set()
    for res in sarif:
        (location,) = res["locations"]
        physical = location["physicalLocation"]
        got.add(
            (
                physical["artifactLocation"]["uri"],
                physical["region"]["startLine"],
                location["logicalLocations"][0]["fullyQualifiedName"],
            )
        )
    assert got == fields
    quality = json.loads((repo / "out.json").read_text())
    assert {(i["location"]["path"], i["location"]["lines"]["begin"]) for i in quality} == {
        (file, line) for file, line, _ in causes
    }
    buss = line_of(repo / "vms" / "typo.yaml", "buss")
    assert (
        "vms/typo.yaml",
        buss,
        "spec.template.spec.domain.devices.disks[1].disk.buss",
    ) in got  # not line 1, not the object's first line
    failures = ElementTree.parse(repo / "out.xml").getroot().iter("failure")
    text = "\n".join(f.text or "" for f in failures)
    assert f"vms/typo.yaml:{buss}: spec.template.spec.domain.devices.disks[1].disk.buss: " in text
