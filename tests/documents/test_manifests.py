"""The manifest reader shared by the command line and the folder source."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from apiserver.documents.manifests import (
    ManifestError,
    parse_manifests,
    read_files,
    read_manifest_paths,
    read_manifests,
)
from apiserver.documents.reader import KubeDumper
from tests.support import shared

VM_YAML = """\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: fedora
  creationTimestamp: 2024-05-01T10:00:00Z
spec:
  runStrategy: Always
"""


def kinds(objects: list[dict[str, object]]) -> list[object]:
    return [o["kind"] for o in objects]


def test_multi_document_yaml_skips_empty_documents() -> None:
    text = "---\n" + VM_YAML + "---\n---\n# only a comment\n---\nkind: VirtualMachinePreference\n...\n"
    objs = parse_manifests(text, "vm.yaml")
    assert kinds(objs) == ["VirtualMachine", "VirtualMachinePreference"]
    assert objs[0]["spec"] == {"runStrategy": "Always"}


def test_timestamps_stay_strings_and_values_are_json() -> None:
    text = VM_YAML + "data:\n  date: 2024-05-01\n  blob: !!binary aGVsbG8=\n  stamp: !!timestamp 2001-12-14\n"
    (vm,) = parse_manifests(text.encode(), "vm.yaml")
    assert vm["metadata"]["creationTimestamp"] == "2024-05-01T10:00:00Z"
    # !!binary is decoded, as sigs.k8s.io/yaml decodes it for kubectl and kube-apiserver.
    assert vm["data"] == {"date": "2024-05-01", "blob": "hello", "stamp": "2001-12-14"}
    json.dumps(vm)  # no datetime, no bytes


def test_yaml_11_booleans_and_non_string_keys_as_kubectl_reads_them() -> None:
    (obj,) = parse_manifests("kind: X\nflag: on\nother: yes\nlabels:\n  1: a\n  true: b\n  1e3: c\n", "x")
    assert obj["flag"] is True and obj["other"] is True
    assert obj["labels"] == {"1": "a", "true": "b", "1000": "c"}
    with pytest.raises(ManifestError, match=r"^x: document 1, line 1: labels: a null mapping key"):
        parse_manifests("labels: {~: a}\nkind: X\n", "x")


def test_merge_keys_are_applied() -> None:
    (obj,) = parse_manifests("base: &b {cpu: 1, memory: 2}\nkind: X\nspec:\n  <<: *b\n  memory: 3\n", "x")
    assert obj["spec"] == {"cpu": 1, "memory": 3}


def test_duplicate_key_is_an_error_with_its_line() -> None:
    with pytest.raises(ManifestError) as exc:
        parse_manifests("kind: A\n---\nkind: B\nmetadata:\n  name: x\n  name: y\n", "vm.yaml")
    err = exc.value
    assert (err.source, err.document, err.line) == ("vm.yaml", 2, 6)
    assert str(err) == 'vm.yaml: document 2, line 6: duplicate field "metadata.name"'


def test_broken_yaml_names_file_document_and_line() -> None:
    text = "kind: A\n---\nkind: B\n---\nkind: C\nmetadata:\n  name: a: b\n"
    with pytest.raises(ManifestError) as exc:
        parse_manifests(text, "vm.yaml")
    # The wording after "allowed" differs between libyaml and pure-Python PyYAML.
    assert str(exc.value).startswith("vm.yaml: document 3, line 7: mapping values are not allowed")
    assert (exc.value.document, exc.value.line) == (3, 7)


def test_unclosed_flow_sequence() -> None:
    with pytest.raises(ManifestError, match=r"^x.yaml: document 1, line 3: did not find expected ','"):
        parse_manifests("kind: A\nx: [1, 2\n", "x.yaml")


def test_json_with_tabs_and_json_streams() -> None:
    objs = parse_manifests(b'{\n\t"kind": "A"\n}\n{"kind": "B"}\n', "x.json")
    assert kinds(objs) == ["A", "B"]
    with pytest.raises(ManifestError, match=r"^x.json: document 1: not a Kubernetes object .* but a list"):
        parse_manifests(b'[{"kind": "A"}]', "x.json")


def test_flow_yaml_that_is_not_json_still_parses() -> None:
    assert parse_manifests("{kind: A, spec: {x: 1}}", "x") == [{"kind": "A", "spec": {"x": 1}}]


def test_broken_json_reports_the_json_error() -> None:
    with pytest.raises(ManifestError) as exc:
        parse_manifests('{"kind": "A",\n "spec": [1,}\n', "vm.json")
    assert exc.value.line == 2
    assert str(exc.value).startswith("vm.json: line 2: not valid JSON: ")


def test_nan_is_not_json() -> None:
    with pytest.raises(ManifestError, match="not valid JSON"):
        parse_manifests('{"kind": "A", "x": NaN, ', "x.json")


def test_utf8_bom_and_utf16() -> None:
    assert kinds(parse_manifests(b"\xef\xbb\xbfkind: A\n", "x")) == ["A"]
    assert kinds(parse_manifests("kind: B\n".encode("utf-16"), "x")) == ["B"]


def test_undecodable_bytes() -> None:
    with pytest.raises(ManifestError, match=r"^x: document 1: .*invalid"):
        parse_manifests(b"kind: A\nname: \xff\xfe\n", "x")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- a\n- b\n", "document 1: not a Kubernetes object (a mapping with a kind), but a list"),
        ("just text\n", "document 1: not a Kubernetes object (a mapping with a kind), but a string"),
        ("kind: A\n---\n42\n", "document 2: not a Kubernetes object (a mapping with a kind), but a number"),
        ("metadata: {name: x}\n", "document 1: kind is missing"),
        ("kind: ''\n", "document 1: kind is missing"),
        ("kind: [A]\n", "document 1: kind must be a string"),
        ("kind: List\nitems: {a: 1}\n", "document 1: List: items must be a list"),
        ("kind: List\nitems: [{kind: A}, {name: b}]\n", "document 1: items[1]: kind is missing"),
    ],
)
def test_documents_that_are_not_objects(text: str, problem: str) -> None:
    with pytest.raises(ManifestError) as exc:
        parse_manifests(text, "in.yaml")
    assert str(exc.value) == f"in.yaml: {problem}"


def test_lists_are_flattened() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n- {kind: A}\n- {kind: B}\n"
        "---\nkind: VirtualMachineInstancetypeList\nitems: [{kind: VirtualMachineInstancetype}]\n"
        "---\nkind: List\nitems: null\n---\nkind: C\n"
    )
    assert kinds(parse_manifests(text, "x")) == ["A", "B", "VirtualMachineInstancetype", "C"]


def test_a_kind_ending_in_list_without_items_is_an_object() -> None:
    assert kinds(parse_manifests("kind: PlayList\nspec: {}\n", "x")) == ["PlayList"]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_directory_walk_order_suffixes_and_hidden_entries(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", "kind: B\n")
    write(tmp_path / "a.yml", "kind: A1\n---\nkind: A2\n")
    write(tmp_path / "a" / "z.json", '{"kind": "AZ"}')
    write(tmp_path / "c" / "d" / "e.yaml", "kind: CDE\n")
    write(tmp_path / "notes.txt", "kind: Ignored\n")
    write(tmp_path / ".hidden.yaml", "kind: Hidden\n")
    write(tmp_path / ".git" / "x.yaml", "kind: Hidden\n")
    found = read_manifest_paths([str(tmp_path)])
    # Depth first in name order, as kubectl -R walks: "a" (the folder) sorts before "a.yml".
    assert [(Path(s).relative_to(tmp_path).as_posix(), o["kind"]) for s, o in found] == [
        ("a/z.json", "AZ"),
        ("a.yml", "A1"),
        ("a.yml", "A2"),
        ("b.yaml", "B"),
        ("c/d/e.yaml", "CDE"),
    ]


def test_configmap_mount_layout_is_read_once(tmp_path: Path) -> None:
    # What the kubelet writes for a ConfigMap volume: hidden timestamped folder, ..data, visible links.
    write(tmp_path / "..2024_05_01" / "vm.yaml", "kind: VirtualMachine\n")
    os.symlink("..2024_05_01", tmp_path / "..data")
    os.symlink("..data/vm.yaml", tmp_path / "vm.yaml")
    assert [o["kind"] for _, o in read_manifest_paths([str(tmp_path)])] == ["VirtualMachine"]


def test_symlink_loop_is_walked_once(tmp_path: Path) -> None:
    write(tmp_path / "sub" / "x.yaml", "kind: X\n")
    os.symlink("..", tmp_path / "sub" / "loop")
    assert [o["kind"] for _, o in read_manifest_paths([str(tmp_path)])] == ["X"]


def test_explicit_file_of_any_suffix_and_stdin(tmp_path: Path) -> None:
    vm = write(tmp_path / "vm.txt", "kind: VirtualMachine\n")
    stdin = io.BytesIO(b"kind: FromStdin\n")
    found = read_manifest_paths([str(vm), "-"], stdin=stdin)
    assert found == [(str(vm), {"kind": "VirtualMachine"}), ("<stdin>", {"kind": "FromStdin"})]


def test_stdin_errors_are_named_stdin() -> None:
    with pytest.raises(ManifestError, match=r"^<stdin>: document 1, line 1: "):
        read_manifest_paths(["-"], stdin=io.BytesIO(b"a: b: c\n"))


def test_missing_path(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(ManifestError) as exc:
        read_manifest_paths([missing])
    assert str(exc.value) == f"{missing}: no such file or directory"
    assert exc.value.source == missing and exc.value.document is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path / "vm.yaml", "kind: A\n")
    path.chmod(0)
    with pytest.raises(ManifestError, match=r"vm.yaml: cannot read: Permission denied$"):
        read_manifest_paths([str(path)])


def test_error_in_a_directory_names_the_file(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "kind: A\n")
    bad = write(tmp_path / "b.yaml", "kind: B\n  x: 1\n")
    with pytest.raises(ManifestError) as exc:
        read_manifest_paths([str(tmp_path)])
    assert exc.value.source == str(bad)
    assert exc.value.line == 2


def test_read_files_goes_on_past_broken_and_missing_inputs(tmp_path: Path) -> None:
    """Every input is read: a broken file is one error (nothing from it is used), the others count."""
    write(tmp_path / "d" / "a.yaml", "kind: A\n---\nkind: A2\n")
    bad = write(tmp_path / "d" / "b.yaml", "kind: B\n---\nkind: B2\n  x: 1\n")
    write(tmp_path / "d" / "c.json", '[{"kind": "C"}]')
    write(tmp_path / "d" / "e.yaml", "kind: E\n")
    missing = str(tmp_path / "nope.yaml")
    files = read_files([str(tmp_path / "d"), missing, "-"], stdin=io.BytesIO(b"kind: S\n"))
    got = [
        (Path(f.source).name, [m.object["kind"] for m in f.manifests], f.error and str(f.error))
        for f in files
    ]
    assert got == [
        ("a.yaml", ["A", "A2"], None),
        ("b.yaml", [], f"{bad}: document 2, line 4: mapping values are not allowed in this context"),
        (
            "c.json",
            [],
            f"{tmp_path / 'd' / 'c.json'}: document 1: not a Kubernetes object (a mapping with a kind), but a list",
        ),
        ("e.yaml", ["E"], None),
        ("nope.yaml", [], f"{missing}: no such file or directory"),
        ("<stdin>", ["S"], None),
    ]
    assert [(m.document, m.source) for m in files[0].manifests] == [
        (1, files[0].source),
        (2, files[0].source),
    ]
    # The strict readers stop at the first of them.
    with pytest.raises(ManifestError) as exc:
        read_manifests([str(tmp_path / "d")])
    assert exc.value.source == str(bad) and exc.value.document == 2 and exc.value.line == 4


def test_read_files_reports_an_unreadable_directory_in_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "a" / "x.yaml", "kind: X\n")
    write(tmp_path / "b" / "y.yaml", "kind: Y\n")
    write(tmp_path / "c.yaml", "kind: C\n")
    scandir = os.scandir

    def refusing(path: Any) -> Any:  # what chmod 0 does to anyone but root
        if Path(path).name == "b":
            raise PermissionError(13, "Permission denied")
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    files = read_files([str(tmp_path)])
    assert [Path(f.source).name for f in files] == ["x.yaml", "b", "c.yaml"]
    assert [len(f.manifests) for f in files] == [1, 0, 1]
    assert str(files[1].error) == f"{tmp_path / 'b'}: cannot read directory: Permission denied"


@shared.needs_shared(shared.CASES_DIR)
def test_every_corpus_input_survives_yaml_and_json() -> None:
    """What the CLI tests write (YAML via PyYAML's dumper, JSON) reads back unchanged, for every case."""
    import yaml

    from tests.support.conformance import iter_cases

    count = 0
    for case in iter_cases():
        docs = [case.input["vm"], *case.input["objects"]]
        text = yaml.dump_all(docs, Dumper=KubeDumper, sort_keys=False)
        assert parse_manifests(text, case.id) == docs, case.id
        listing = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, indent=1)
        assert parse_manifests(listing.encode(), case.id) == docs, case.id
        count += 1
    assert count > 2000
