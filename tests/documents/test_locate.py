"""A field path of a Status cause mapped back to its line in the input (apiserver/documents/locate.py):
YAML and JSON, several documents, List items, anchors and merge keys, and fields the text does not hold."""

from __future__ import annotations

import json

import pytest

from apiserver.documents.locate import Locator, path_segments
from apiserver.documents.manifests import load_manifests

VM_YAML = """\
# a comment
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: a
  labels:
    app.kubernetes.io/name: web
spec:
  template:
    spec:
      domain:
        cpu:
          cores: 4
        devices:
          disks:
          - name: root
            disk:
              bus: virtio
          - name: data
            disk: {bus: sata}
---
---
kind: VirtualMachineList
items:
- kind: VirtualMachine
  metadata: {name: b}
- kind: VirtualMachine
  metadata:
    name: c
  spec:
    runStrategy: Always
"""


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """The 1-based line of the nth line containing ``needle``, found in the text, not assumed."""
    found = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    return found[nth - 1]


def test_path_segments() -> None:
    assert path_segments("spec.template.spec.domain.cpu.cores") == [
        "spec",
        "template",
        "spec",
        "domain",
        "cpu",
        "cores",
    ]
    assert path_segments("a.b[0].c") == ["a", "b", "0", "c"]
    assert path_segments("metadata.labels[app.kubernetes.io/name]") == [
        "metadata",
        "labels",
        "app.kubernetes.io/name",
    ]
    assert path_segments("a..b") is None
    assert path_segments("") is None


@pytest.mark.parametrize(
    ("field", "needle", "nth"),
    [
        ("spec.template.spec.domain.cpu.cores", "cores: 4", 1),
        ("spec.template.spec.domain.devices.disks[1].disk.bus", "bus: sata", 1),
        ("spec.template.spec.domain.devices.disks[1]", "- name: data", 1),
        ("spec.template.spec.domain.devices.disks[0].disk.bus", "bus: virtio", 1),
        ("metadata.labels[app.kubernetes.io/name]", "app.kubernetes.io/name", 1),
        # Not in the text: its nearest ancestor that is.
        ("spec.template.spec.domain.memory.guest", "domain:", 1),
        ("spec.template.spec.domain.devices.disks[7].name", "disks:", 1),
        # Several fields in one cause: the first one found.
        ("spec.nothing, spec.template.spec.domain.cpu.cores", "cores: 4", 1),
    ],
)
def test_yaml_fields(field: str, needle: str, nth: int) -> None:
    assert Locator(VM_YAML.encode()).line(1, None, field) == line_of(VM_YAML, needle, nth)


def test_documents_and_items_are_numbered_as_the_manifest_reader_numbers_them() -> None:
    manifests = load_manifests(VM_YAML, "vm.yaml")
    locator = Locator(VM_YAML)
    c = next(m for m in manifests if m.object["metadata"]["name"] == "c")
    assert c.item == 1
    assert locator.line(c.document, c.item, "spec.runStrategy") == line_of(VM_YAML, "runStrategy")
    assert locator.start(c.document, c.item) == line_of(VM_YAML, "- kind: VirtualMachine", 2)
    assert locator.start(1) == line_of(VM_YAML, "apiVersion")
    assert locator.line(9, None, "spec") is None


def test_json_and_json_streams() -> None:
    vm = {"kind": "VirtualMachine", "spec": {"template": {"spec": {"domain": {"cpu": {"cores": 4}}}}}}
    text = json.dumps({"kind": "List", "items": [{"kind": "ConfigMap"}, vm]}, indent="\t")
    stream = text + "\n" + text
    manifests = load_manifests(stream, "vms.json")
    second = [m for m in manifests if m.object["kind"] == "VirtualMachine"][1]
    assert (second.document, second.item) == (2, 1)
    line = Locator(stream.encode()).line(second.document, second.item, "spec.template.spec.domain.cpu.cores")
    assert line == line_of(stream, '"cores": 4', 2)


def test_anchors_and_merge_keys() -> None:
    text = """\
kind: VirtualMachine
base: &base
  cores: 2
spec:
  cpu:
    <<: *base
    threads: 1
"""
    locator = Locator(text)
    assert locator.line(1, None, "spec.cpu.threads") == 7
    assert locator.line(1, None, "spec.cpu.cores") == 3  # where the merged value is written


def test_text_the_composer_cannot_follow_gives_no_line() -> None:
    assert Locator(b"kind: [\n").line(1, None, "kind") is None
    assert Locator(b"kind: [\n").start(1) is None
