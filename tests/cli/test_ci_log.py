"""What a CI log shows of a run: ``--quiet`` is the findings alone (no ``catalog:``, ``skipped:`` or
``note:`` line), an unrendered Helm template is named as such, SARIF points at this tool (never at
KubeVirt), counts agree with their nouns and "neither" goes with "nor"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from apiserver.cli import ciformats
from apiserver.cli.inputs import Catalog
from tests.cli.test_expand_gate import COMMAND, EXAMPLES, cli, vm

CATALOG = (EXAMPLES / "instancetypes.yaml").read_text()


def gitops(tmp_path: Path) -> Path:
    """An admitted VM, an unresolved one, a ConfigMap to skip, and a catalog beside them."""
    vms = tmp_path / "vms"
    vms.mkdir()
    (vms / "ok.json").write_text(json.dumps(vm("ok")))
    (vms / "lost.json").write_text(json.dumps(vm("lost", instancetype="absent")))
    (vms / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n")
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    return tmp_path


def test_quiet_leaves_out_the_catalog_skipped_and_note_lines(tmp_path: Path) -> None:
    repo = gitops(tmp_path)
    args = ("-f", "vms/", "--catalog", "catalog.yaml", "--check")
    loud = cli(*args, cwd=repo)
    assert loud.returncode == 3, loud.stderr
    prefixes = [line.split(":", 1)[0] for line in loud.stderr.splitlines() if not line.startswith("{")]
    assert prefixes == ["catalog", "unresolved", "admitted", "skipped", "note", "summary"]

    quiet = cli(*args, "--quiet", cwd=repo)
    assert quiet.returncode == 3
    lines = quiet.stderr.splitlines()
    assert len(lines) == 2, quiet.stderr  # the finding and its Status
    assert lines[0].startswith("unresolved: vms/lost.json: document 1: default/lost: ")
    assert json.loads(lines[1])["kind"] == "Status"


def test_the_unresolved_note_says_neither_nor(tmp_path: Path) -> None:
    repo = gitops(tmp_path)
    with_catalog = cli("-f", "vms/", "--catalog", "catalog.yaml", "--check", cwd=repo)
    (note,) = [line for line in with_catalog.stderr.splitlines() if line.startswith("note:")]
    assert note.startswith(
        "note: 1 VM is unresolved: it names an instancetype, preference or ControllerRevision found in "
        "neither the inputs nor the catalog; "
    )
    without = cli("-f", "vms/", "--check", cwd=repo)
    (note,) = [line for line in without.stderr.splitlines() if line.startswith("note:")]
    assert "ControllerRevision not found in the inputs (no --catalog was given); " in note
    assert " or " not in note.split(";")[0].replace("instancetype, preference or Controller", "")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{{ .Values.vm | toYaml }}\n", "not valid JSON: "),
        (
            "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: {{ .Values.name }}\n",
            "metadata.name: a mapping key must be a scalar",
        ),
    ],
    ids=["json-like", "yaml"],
)
def test_an_unrendered_template_is_named_as_such(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "vm.yaml").write_text(text)
    proc = cli("-f", "vm.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 2
    line = proc.stderr.splitlines()[0]
    assert line.startswith("error: vm.yaml: ")
    template = text[text.index("{{") : text.index("}}") + 2]
    assert f": this looks like an unrendered template ({template}): render it first (helm template" in line
    assert problem in line


def test_a_file_that_does_not_parse_without_a_template_says_only_what_the_parser_found(
    tmp_path: Path,
) -> None:
    (tmp_path / "vm.yaml").write_text("kind: VirtualMachine\nmetadata:\n  name: a: b\n")
    proc = cli("-f", "vm.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 2
    assert "template" not in proc.stderr


def test_sarif_points_at_this_tool_not_at_kubevirt(tmp_path: Path) -> None:
    repo = gitops(tmp_path)
    log = json.loads(cli("-f", "vms/", "-o", "sarif", cwd=repo).stdout)
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "kubevirt-expand"
    assert "kubevirt/kubevirt" not in driver.get("informationUri", "")
    assert driver.get("informationUri", "") == ciformats.information_uri()


def test_the_information_uri_is_the_packages_documentation(monkeypatch: pytest.MonkeyPatch) -> None:
    from email.message import Message

    meta = Message()
    meta["Project-URL"] = "Source, https://example.org/src"
    meta["Project-URL"] = "Documentation, https://example.org/docs"
    monkeypatch.setattr("importlib.metadata.metadata", lambda name: meta)
    assert ciformats.information_uri() == "https://example.org/docs"
    monkeypatch.setattr("importlib.metadata.metadata", lambda name: Message())
    assert ciformats.information_uri() == ""


def test_one_is_singular(tmp_path: Path) -> None:
    (tmp_path / "before").mkdir()
    (tmp_path / "after").mkdir()
    (tmp_path / "before" / "cat.yaml").write_text(CATALOG)
    (tmp_path / "after" / "cat.yaml").write_text(CATALOG)
    for side in ("before", "after"):
        (tmp_path / side / "vm.json").write_text(json.dumps(vm("one")))
    proc = subprocess.run(
        [*COMMAND, "preview", "--before", "before", "--after", "after"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("1 VM: ")

    catalog = Catalog(files=1, ignored=1)
    assert catalog.describe() == "catalog: 1 file: nothing a VM uses (1 other object ignored)"
