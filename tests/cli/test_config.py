"""``.kubevirt-expand.yaml``: one run judges each cluster folder of a GitOps repository against its own
catalog and options (tests/cli/clusters/repo: clusters/east and clusters/west, a kustomize-like base both
use, the same ``shop/web`` in both clusters, a catalog per cluster), reports stay single files, flags
override the file, and a wrong file is refused with its line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from tests.cli.test_expand_gate import cli
from tests.cli.test_reports import official_validator

FIXTURE = Path(__file__).parent / "clusters" / "repo"
TYPO = "spec.template.spec.domain.devices.disks[0].disk.buss"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    (root / ".git").mkdir()  # the repository's root: the file is looked for no higher
    return root


def report(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def verdicts(proc: subprocess.CompletedProcess[str]) -> list[tuple[Any, ...]]:
    return [(r["cluster"], r["file"], f"{r['namespace']}/{r['name']}", r["outcome"]) for r in report(proc)]


def line_of(path: Path, needle: str) -> int:
    text = path.read_text()
    return text.count("\n", 0, text.index(needle)) + 1


def test_each_cluster_is_judged_against_its_own_catalog(repo: Path) -> None:
    proc = cli("--check", "-o", "jsonl", cwd=repo)
    # east: the typo refused (the file's validate: true), the base VM admitted on east's "standard";
    # west: its own shop/web (no conflict with east's) admitted on "large", the base VM unresolved (west's
    # catalog has no "standard").
    assert verdicts(proc) == [
        ("east", "clusters/east/web.yaml", "shop/web", "Refused"),
        ("east", "base/shop/db.yaml", "shop/db", "Admitted"),
        ("west", "clusters/west/web.yaml", "shop/web", "Admitted"),
        ("west", "base/shop/db.yaml", "shop/db", "Unresolved"),
    ]
    assert proc.returncode == 1, proc.stderr  # the worst across clusters: east's refusal over west's 3
    assert "defined twice" not in proc.stderr
    refused = report(proc)[0]
    assert [(c["field"], c["line"]) for c in refused["causes"]] == [
        (TYPO, line_of(repo / "clusters" / "east" / "web.yaml", "buss"))
    ]
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("{")]
    assert lines[0] == "cluster east: clusters/east, base"
    assert lines[2].startswith(
        "refused: [east] clusters/east/web.yaml: document 1: shop/web: admission webhook"
    )
    assert any(
        line.startswith("unresolved: [west] base/shop/db.yaml: document 1: shop/db: ") for line in lines
    )
    assert "cluster east: 2 VMs, 1 admitted, 1 refused, 0 errors, 3 files, 2 skipped" in lines
    assert "cluster west: 2 VMs, 1 admitted, 0 refused, 1 unresolved, 0 errors, 3 files, 2 skipped" in lines
    assert (
        lines[-1]
        == "summary: 4 VMs, 2 admitted, 1 refused, 1 unresolved, 0 errors, 6 files, 4 skipped, 2 clusters"
    )


def test_the_same_folders_in_one_run_conflict(repo: Path) -> None:
    """What the file prevents: -f gives the paths (the file's clusters unused, its defaults kept), and the
    two clusters' shop/web are one object defined twice."""
    proc = cli("-f", "clusters", "-f", "base", "--check", "-o", "jsonl", cwd=repo)
    assert proc.returncode == 2
    assert (
        "shop/web is defined twice: in clusters/east/web.yaml: document 1 and in clusters/west/web.yaml"
        in proc.stderr
    )
    assert {r["cluster"] for r in report(proc)} == {None}


def test_reports_stay_single_files_and_name_the_cluster(repo: Path) -> None:
    args = [
        "--check",
        "--report",
        "junit=junit.xml",
        "--report",
        "sarif=out.sarif",
        "--report",
        "codequality=cq.json",
    ]
    proc = cli(*args, cwd=repo)
    assert proc.returncode == 1
    suites = ElementTree.parse(repo / "junit.xml").getroot().findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures"), s.get("skipped")) for s in suites] == [
        ("east", "2", "1", "0"),
        ("west", "2", "0", "1"),
    ]
    west_db = suites[1].findall("testcase")[1]
    assert (west_db.get("name"), west_db.get("classname")) == (
        "[west] document 1: shop/db",
        "base/shop/db.yaml",
    )
    log = json.loads((repo / "out.sarif").read_text())
    official_validator().validate(log)
    (run,) = log["runs"]
    typo = line_of(repo / "clusters" / "east" / "web.yaml", "buss")
    found = [
        (r["properties"]["cluster"], r["locations"][0]["physicalLocation"]["region"]["startLine"], r["level"])
        for r in run["results"]
    ]
    assert found == [
        ("east", typo, "error"),
        ("west", line_of(repo / "base" / "shop" / "db.yaml", "standard"), "warning"),
    ]
    assert run["results"][0]["message"]["text"].startswith("[east] document 1: shop/web: ")
    issues = json.loads((repo / "cq.json").read_text())
    assert [(i["location"]["path"], i["location"]["lines"]["begin"]) for i in issues] == [
        ("clusters/east/web.yaml", typo),
        ("base/shop/db.yaml", line_of(repo / "base" / "shop" / "db.yaml", "standard")),
    ]
    assert len({i["fingerprint"] for i in issues}) == 2


def test_flags_override_the_file(repo: Path) -> None:
    # --catalog replaces each cluster's: west's base VM now finds east's "standard", its web no "large".
    proc = cli("--check", "-o", "jsonl", "--catalog", "catalogs/east.yaml", cwd=repo)
    assert [v[3] for v in verdicts(proc)] == ["Refused", "Admitted", "Unresolved", "Admitted"]
    # --field-validation over the file's (and the default) does not undo the file's validate: true.
    proc = cli("--check", "-o", "jsonl", "--field-validation", "Ignore", cwd=repo)
    assert [v[3] for v in verdicts(proc)] == ["Refused", "Admitted", "Admitted", "Unresolved"]


def test_options_per_cluster(repo: Path) -> None:
    (repo / ".kubevirt-expand.yaml").write_text(
        "catalog: catalogs/east.yaml\n"
        "clusters:\n"
        "  - name: strict\n"
        "    paths: [clusters/east]\n"
        "    validate: true\n"
        "  - name: lenient\n"
        "    paths: [clusters/east]\n"
        "    fieldValidation: warn\n"
    )
    proc = cli("--check", "-o", "jsonl", cwd=repo)
    got = report(proc)
    assert [(r["cluster"], r["outcome"]) for r in got] == [("strict", "Refused"), ("lenient", "Admitted")]
    assert got[1]["warnings"] == [f'unknown field "{TYPO}"']
    assert (
        f'Warning: [lenient] clusters/east/web.yaml: document 1: shop/web: unknown field "{TYPO}"'
        in proc.stderr
    )
    assert proc.returncode == 1


def test_the_file_is_found_above_and_given_with_config(repo: Path) -> None:
    below = cli("--check", "-o", "jsonl", cwd=repo / "clusters" / "east")
    assert [v[1] for v in verdicts(below)] == [
        "../../clusters/east/web.yaml",
        "../../base/shop/db.yaml",
        "../../clusters/west/web.yaml",
        "../../base/shop/db.yaml",
    ]
    given = cli("--config", "repo/.kubevirt-expand.yaml", "--check", "-o", "jsonl", cwd=repo.parent)
    assert [v[1] for v in verdicts(given)][:2] == ["repo/clusters/east/web.yaml", "repo/base/shop/db.yaml"]
    assert given.returncode == below.returncode == 1
    # Outside a git repository only the current folder's file counts.
    (repo / ".git").rmdir()
    outside = cli("--check", cwd=repo / "clusters" / "east")
    assert outside.returncode == 2
    assert outside.stderr.startswith("error: no input: give -f FILE|DIR|- or write the paths to judge in")
    assert cli("--check", cwd=repo).returncode == 1


CONFIG_ERRORS = [
    (
        "clusters:\n  - name: east\n    paths: [clusters/east]\n    catalogue: [catalogs/east.yaml]\n",
        "line 4: cluster east: unknown key 'catalogue'; did you mean catalog?",
    ),
    ("validate: yes please\npaths: [base]\n", "line 1: the file: validate should be true or false"),
    ("paths: {base: 1}\n", "line 1: the file: paths should be a list of strings"),
    ("clusters: {east: [base]}\n", "line 1: clusters: should be a list of clusters"),
    (
        "clusters:\n  - name: east\n    paths: [base]\n  - name: east\n    paths: [base]\n",
        "line 4: clusters[1]: cluster 'east' is named twice (first on line 2)",
    ),
    ("clusters:\n  - name: east\n", "line 2: cluster east: paths is missing"),
    ("clusters:\n  - paths: [base]\n", "line 2: clusters[0]: name is missing"),
    (
        "paths: [base]\nfieldValidation: Loose\n",
        "line 2: the file: fieldValidation should be one of Strict, Warn, Ignore",
    ),
    ("paths: [base]\nclusters:\n  - name: a\n    paths: [base]\n", "line 1: paths: give them per cluster"),
    ("validate: true\n", "line 1: says no paths to judge"),
    ("", "is empty"),
    ("clusters: [\n", "line 2: "),
]


@pytest.mark.parametrize(("text", "message"), CONFIG_ERRORS, ids=[m for _, m in CONFIG_ERRORS])
def test_a_wrong_file_is_a_usage_error_naming_its_line(repo: Path, text: str, message: str) -> None:
    (repo / ".kubevirt-expand.yaml").write_text(text)
    proc = cli("--check", cwd=repo)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: .kubevirt-expand.yaml: "), proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
