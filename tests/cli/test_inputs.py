"""The command line on careless and hostile files: a clean message and exit 1 or 2, never a traceback,
never a crash, never output out of proportion to the input (through the installed console script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "kubevirt-expand"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "apiserver.cli"]

HEAD = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: vm1\n"
SPEC = "spec:\n  template:\n    spec:\n      domain:\n        devices: {}\n"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def run(tmp_path: Path, text: str | bytes, *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "in.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return subprocess.run(
        [*COMMAND, "expand", "-f", str(path), *args], capture_output=True, text=True, timeout=120, cwd=REPO
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[" * 100_000 + "]" * 100_000, "in.yaml: line 1: nested deeper than 100 levels"),
        (HEAD + "  x: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n" + SPEC, "metadata.x.a.a.a"),
        (
            HEAD + "  labels: &l {a: *l}\n" + SPEC,
            'document 1, line 5: metadata.labels.a: anchor "l" value contains itself',
        ),
        (
            HEAD + "  managedFields:\n  - fieldsV1:\n      " + BOMB.replace("\n", "\n      ") + SPEC,
            "too much aliasing",
        ),
        (HEAD + "  labels: {~: a}\n" + SPEC, "metadata.labels: a null mapping key is not supported"),
        (HEAD + "  generation: .inf\n" + SPEC, "metadata.generation: .inf is not a JSON number"),
        ('{"kind": "VirtualMachine", "x": 1' + "0" * 5000 + "}", "number out of range"),
        (HEAD + SPEC + "  x: [\n", "did not find expected"),
    ],
    ids=["deep-1e5", "deep-5000", "recursive", "alias-bomb", "null-key", "inf", "json-5000-digits", "syntax"],
)
def test_unreadable_files_are_errors(tmp_path: Path, text: str, fragment: str) -> None:
    proc = run(tmp_path, text, "-o", "json")
    assert proc.returncode == 2, proc.stderr[-500:]
    assert proc.stdout == '{\n    "apiVersion": "v1",\n    "kind": "List",\n    "items": []\n}\n'
    human, status, last = proc.stderr.splitlines()
    assert human.startswith(f"error: {tmp_path / 'in.yaml'}: ") and fragment in human
    assert json.loads(status)["code"] == 400
    assert last == "summary: 0 VMs, 0 admitted, 0 refused, 1 error, 1 file"
    assert "Traceback" not in proc.stderr and len(proc.stderr) < 2000


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_yaml_tags_and_big_numbers_expand(tmp_path: Path, output: str) -> None:
    text = (
        HEAD
        + "  labels: !!set {a, b}\n  annotations: {note: !!binary aGVsbG8=}\n"
        + "  managedFields:\n  - fieldsV1: {f:x: 1"
        + "0" * 5000
        + ", f:y: 100000000000000000000000}\n"
        + SPEC.replace(
            "devices: {}", "devices: {}\n        resources: {requests: {memory: 1" + "0" * 5000 + "}}"
        )
    )
    proc = run(tmp_path, text, "-o", output, "--field-validation", "Ignore")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stdout) < 30_000
    if output == "json":
        vm = json.loads(proc.stdout)
        assert vm["metadata"]["labels"] == {"a": "", "b": ""}
        assert vm["metadata"]["annotations"] == {"note": "hello"}
        # go-yaml v2: beyond a float it is text, beyond 64 bits a float
        assert vm["metadata"]["managedFields"][0]["fieldsV1"] == {"f:x": "1" + "0" * 5000, "f:y": 1e23}
        assert vm["spec"]["template"]["spec"]["domain"]["resources"]["requests"]["memory"] == "100"


def test_a_quantity_of_too_many_digits_fails_the_vm(tmp_path: Path) -> None:
    text = HEAD + SPEC.replace(
        "devices: {}", "devices: {}\n        resources: {requests: {memory: '" + "12345" * 1000 + "'}}"
    )
    proc = run(tmp_path, text, "-o", "json")
    assert proc.returncode == 1
    human, status, _ = proc.stderr.splitlines()
    assert human.startswith(f"refused: {tmp_path / 'in.yaml'}: document 1: default/vm1: ")
    assert "at most 4000 significant digits" in human
    assert json.loads(status)["code"] == 422
    assert "Traceback" not in proc.stderr


def test_a_small_alias_file_cannot_make_huge_output(tmp_path: Path) -> None:
    text = HEAD + "  annotations:\n    " + BOMB.replace("\n", "\n    ") + SPEC
    assert len(text) < 700
    proc = run(tmp_path, text, "-o", "yaml")
    assert proc.returncode == 2
    assert proc.stdout == "" and "too much aliasing" in proc.stderr


def test_a_vm_without_spec_and_a_typo_fail_by_default(tmp_path: Path) -> None:
    proc = run(
        tmp_path,
        HEAD
        + "---\n"
        + HEAD.replace("vm1", "vm2")
        + SPEC.replace("domain:", "domain:\n        cpuu: {cores: 2}"),
    )
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    where = f"refused: {tmp_path / 'in.yaml'}: document"
    assert (
        lines[0]
        == f'{where} 1: default/vm1: VirtualMachine.kubevirt.io "vm1" is invalid: spec: Required value'
    )
    assert lines[2].startswith(f'{where} 2: default/vm2: VirtualMachine.kubevirt.io "vm2" is invalid: ')
    assert 'unknown field "spec.template.spec.domain.cpuu"' in lines[2]
    validated = run(
        tmp_path, HEAD + SPEC.replace("domain:", "domain:\n        cpuu: {cores: 2}"), "--validate"
    )
    assert validated.returncode == 1  # --validate does not make a typo pass either
