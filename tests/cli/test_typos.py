"""Typos as findings (issue 38): a GitOps-like tree (tests/cli/typos/repo) whose VMs misspell common-instancetypes'
names and a team's own instancetype, beside objects whose kind is misspelt in KubeVirt's API groups, judged
against the bundled common-instancetypes.

What a user sees: the closest name in every ``Unresolved`` VM's line, ``--catalog-complete`` turning a
name the catalog lacks into ``Missing`` (exit 4), an unknown kind of ``kubevirt.io`` or
``instancetype.kubevirt.io`` an error with the kind meant (exit 2), the missing instancetype named first
under ``--validate`` whatever else refuses the VM, and each finding at its file and line in every
report format.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from tests.cli.test_expand_gate import COMMAND

HERE = Path(__file__).parent / "typos"

INSTANCETYPE_NOT_FOUND = 'virtualmachineclusterinstancetypes.instancetype.kubevirt.io "u1.mediun" not found'
PREFERENCE_NOT_FOUND = 'virtualmachineclusterpreferences.instancetype.kubevirt.io "fedoraa" not found'
WEB_FIRST = f'{INSTANCETYPE_NOT_FOUND} (did you mean "u1.medium"?)'
DB_FIRST = f'{PREFERENCE_NOT_FOUND} (did you mean "fedora"?)'
BATCH_FIRST = 'virtualmachineinstancetypes.instancetype.kubevirt.io "batch-smal" not found (did you mean "batch-small"?)'
BATCH_2_FIRST = (
    'virtualmachineclusterinstancetypes.instancetype.kubevirt.io "batch-small" not found (did you mean '
    'VirtualMachineInstancetype "batch-small"? set spec.instancetype.kind: VirtualMachineInstancetype)'
)
# The lines of the fields in tests/cli/typos/repo.
WEB_INSTANCETYPE_LINE = 10  # vms/web.yaml: name: u1.mediun
DB_PREFERENCE_LINE = 10  # vms/db.yaml: name: fedoraa
KIND_LINES = {1: 2, 2: 10}  # kinds/typos.yaml: the kind: line of each document


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, "expand", "-f", "repo", "--catalog", "common-instancetypes", "--check", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=HERE,
    )


def failure_lines(stderr: str) -> dict[str, str]:
    """Each failure line (without its Status JSON) by the name it gives its object."""
    found = {}
    for line in stderr.splitlines():
        verdict, _, rest = line.partition(": ")
        if verdict in ("unresolved", "missing", "refused", "error"):
            label = rest.split(": ")[2]
            found[label] = f"{verdict}: {rest.split(': ', 3)[3]}"
    return found


def report(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    return {f"{r['namespace']}/{r['name']}": r for r in lines}


def test_unresolved_names_come_with_the_closest_name() -> None:
    proc = run("--exclude", "kinds")
    assert proc.returncode == 3, proc.stderr
    lines = failure_lines(proc.stderr)
    assert lines == {
        "shop/batch": f"unresolved: {BATCH_FIRST}",
        "shop/batch-2": f"unresolved: {BATCH_2_FIRST}",
        "shop/db": f"unresolved: {DB_FIRST}",
        "shop/web": f"unresolved: {WEB_FIRST}",
    }
    assert "admitted: repo/vms/cache.yaml: document 1: shop/cache" in proc.stderr.splitlines()
    assert proc.stderr.splitlines()[-1] == (
        "summary: 5 VMs, 1 admitted, 0 refused, 4 unresolved, 0 errors, 5 files, 3 skipped"
    )


def test_catalog_complete_makes_a_missing_name_an_error_of_its_own() -> None:
    proc = run("--exclude", "kinds", "--catalog-complete", "-o", "jsonl")
    assert proc.returncode == 4, proc.stderr
    got = report(proc)
    assert {key: r["outcome"] for key, r in got.items()} == {
        "shop/batch": "Missing",
        "shop/batch-2": "Missing",
        "shop/cache": "Admitted",
        "shop/db": "Missing",
        "shop/web": "Missing",
    }
    # The Status stays KubeVirt's own answer; the reported cause carries the suggestion and the line.
    db = got["shop/db"]
    assert db["status"]["message"] == PREFERENCE_NOT_FOUND
    assert db["causes"] == [
        {
            "reason": "FieldValueNotFound",
            "message": DB_FIRST,
            "field": "spec.preference.name",
            "line": DB_PREFERENCE_LINE,
        }
    ]
    assert failure_lines(proc.stderr)["shop/db"] == f"missing: {DB_FIRST}"
    assert proc.stderr.splitlines()[-1] == (
        "summary: 5 VMs, 1 admitted, 0 refused, 4 missing, 0 errors, 5 files, 3 skipped"
    )


def test_a_refusal_and_a_missing_name_exit_as_the_missing_name() -> None:
    """Exit codes rank 2, 4, 1, 3: the missing name is often what makes the webhook refuse."""
    proc = run("--exclude", "kinds", "--catalog-complete", "--validate")
    assert proc.returncode == 4, proc.stderr


def test_under_validate_the_missing_instancetype_is_named_first() -> None:
    # KubeVirt's webhook passes over the instancetype it cannot find, then refuses the VM for the memory
    # its preference requires: that refusal alone would never name u1.mediun.
    refusal = (
        "admission webhook would deny the VirtualMachine: failure checking preference requirements: "
        "insufficient Memory resources of 0 provided by VirtualMachine, preference requires 2Gi"
    )
    proc = run("--exclude", "kinds", "--validate", "-o", "jsonl")
    assert proc.returncode == 1, proc.stderr
    assert failure_lines(proc.stderr)["shop/web"] == f"refused: {WEB_FIRST}; {refusal}"
    web = report(proc)["shop/web"]
    assert web["outcome"] == "Refused"
    assert web["status"]["message"] == refusal  # KubeVirt's own
    assert [(c["field"], c["line"]) for c in web["causes"]] == [
        ("spec.instancetype.name", WEB_INSTANCETYPE_LINE),
        ("spec.template.spec.domain.memory", 16),
    ]
    assert web["causes"][0]["message"] == WEB_FIRST


def test_an_unknown_kind_of_kubevirts_groups_is_an_error_with_the_kind_meant() -> None:
    proc = run("-o", "jsonl")
    assert proc.returncode == 2, proc.stderr
    errors = [r for r in map(json.loads, proc.stdout.splitlines()) if r["outcome"] == "Error"]
    assert [(r["file"], r["document"], r["kind"], r["name"]) for r in errors] == [
        ("repo/kinds/typos.yaml", 1, "VirtualMachne", "frontend"),
        ("repo/kinds/typos.yaml", 2, "VirtualMachineClusterInstancetyp", "huge"),
    ]
    first = errors[0]
    assert first["status"]["message"] == (
        'no matches for kind "VirtualMachne" in version "kubevirt.io/v1"; did you mean "VirtualMachine"? '
        "(a kind of a newer KubeVirt passes with --skip-kind VirtualMachne)"
    )
    assert [(c["field"], c["line"]) for c in first["causes"]] == [("kind", KIND_LINES[1])]
    assert errors[1]["causes"][0]["line"] == KIND_LINES[2]
    assert 'did you mean "VirtualMachineClusterInstancetype"?' in errors[1]["status"]["message"]
    # Kinds KubeVirt serves but this command does not read, and other groups' kinds, are still skipped.
    assert "skipped: 1 ConfigMap, 1 VirtualMachinePool" in proc.stderr


def test_skip_kind_passes_an_unknown_kind_over() -> None:
    proc = run("--skip-kind", "VirtualMachne,VirtualMachineClusterInstancetyp", "--exclude", "vms")
    assert "no matches for kind" not in proc.stderr
    assert "1 VirtualMachineClusterInstancetyp, 1 VirtualMachinePool, 1 VirtualMachne" in proc.stderr


def test_without_a_catalog_the_bundled_one_is_named() -> None:
    proc = subprocess.run(
        [*COMMAND, "expand", "-f", "repo/vms/db.yaml", "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=HERE,
    )
    assert proc.returncode == 3
    assert failure_lines(proc.stderr)["shop/db"] == (
        'unresolved: virtualmachineclusterinstancetypes.instancetype.kubevirt.io "u1.large" not found (the '
        "bundled common-instancetypes@v1.7.0 has it: --catalog common-instancetypes); "
        'virtualmachineclusterpreferences.instancetype.kubevirt.io "fedoraa" not found (did you mean "fedora"? '
        "the bundled common-instancetypes@v1.7.0 has it: --catalog common-instancetypes)"
    )


def test_every_report_format_keeps_file_and_line(tmp_path: Path) -> None:
    reports = {fmt: tmp_path / f"report.{fmt}" for fmt in ("junit", "sarif", "codequality")}
    args = [a for fmt, path in reports.items() for a in ("--report", f"{fmt}={path}")]
    proc = run("--catalog-complete", "--validate", "-o", "jsonl", *args)
    assert proc.returncode == 2, proc.stderr  # the kinds
    # (file, line, first words) of each finding, as every format must place it.
    expected = {
        ("repo/vms/web.yaml", WEB_INSTANCETYPE_LINE, WEB_FIRST),
        ("repo/vms/db.yaml", DB_PREFERENCE_LINE, DB_FIRST),
        ("repo/kinds/typos.yaml", KIND_LINES[1], 'no matches for kind "VirtualMachne"'),
        ("repo/kinds/typos.yaml", KIND_LINES[2], 'no matches for kind "VirtualMachineClusterInstancetyp"'),
    }

    def holds(found: set[tuple[str, int, str]]) -> None:
        for file, line, text in expected:
            assert any(f == file and n == line and text in m for f, n, m in found), (file, line, text, found)

    jsonl = {
        (r["file"], c["line"], c["message"])
        for r in map(json.loads, proc.stdout.splitlines())
        for c in r["causes"]
    }
    holds(jsonl)

    sarif = json.loads(reports["sarif"].read_text())
    holds(
        {
            (
                r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
                r["message"]["text"],
            )
            for r in sarif["runs"][0]["results"]
        }
    )
    web = next(r for r in sarif["runs"][0]["results"] if "shop/web" in r["message"]["text"])
    assert web["message"]["text"] == f"document 1: shop/web: {WEB_FIRST}"  # the first finding of web
    assert web["level"] == "error" and web["ruleId"] == "FieldValueNotFound"

    quality = json.loads(reports["codequality"].read_text())
    holds({(i["location"]["path"], i["location"]["lines"]["begin"], i["description"]) for i in quality})
    assert {
        i["severity"] for i in quality if "shop/" in i["description"] and "not found" in i["description"]
    } == {"major"}

    junit = ElementTree.parse(reports["junit"]).getroot()
    cases = {c.get("name"): c for c in junit.iter("testcase")}
    web_case = cases["document 1: shop/web"]
    assert web_case.get("file") == "repo/vms/web.yaml" and web_case.get("line") == str(WEB_INSTANCETYPE_LINE)
    failure = web_case.find("failure")
    assert failure is not None and failure.get("message", "").startswith(WEB_FIRST)
    kind_case = cases["document 1: VirtualMachne shop/frontend"]
    assert kind_case.get("line") == str(KIND_LINES[1]) and kind_case.find("error") is not None
