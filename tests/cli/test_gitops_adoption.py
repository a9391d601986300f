"""The gate a platform team adopts, end to end: one repository of many clusters (a shared base, a
cluster's own folder, Helm output rendered into the repository, an unrendered chart left out), one
``.kubevirt-expand.yaml``, the bundled common-instancetypes (a release per cluster), offline. Typos of a
name, a kind and a field are each a finding at its file and line, in the cluster it belongs to; the run
is red exactly until each is fixed, then green."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apiserver.cli import main

CONFIG = """\
validate: true
catalogComplete: true
exclude: [charts]
clusters:
  - name: east
    paths: [base, clusters/east, rendered/east.yaml]
    catalog: [common-instancetypes@v1.7.0]
  - name: west
    paths: [base, clusters/west]
    catalog: [common-instancetypes@v1.6.0, catalogs/west-team.yaml]
"""


def vm(
    name: str, instancetype: str, preference: str | None = None, kind: str = "VirtualMachine", disks: str = ""
) -> str:
    preference_line = f"  preference:\n    name: {preference}\n" if preference else ""
    return (
        f"apiVersion: kubevirt.io/v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: shop\nspec:\n"
        f"  runStrategy: Halted\n  instancetype:\n    name: {instancetype}\n{preference_line}"
        f"  template:\n    spec:\n      domain:\n        devices:{disks or ' {}'}\n"
    )


TEAM = """\
apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineClusterInstancetype
metadata:
  name: team.large
spec:
  cpu:
    guest: 4
  memory:
    guest: 8Gi
"""
HELM_OUTPUT = (
    "---\n# Source: shop/templates/config.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\n"
    "data:\n  a: b\n---\n# Source: shop/templates/vm.yaml\n" + vm("cache", "u1.small", "alpine")
)
BUSS = "\n          disks:\n            - name: root\n              disk:\n                buss: virtio"


def _repository(root: Path) -> None:
    files = {
        ".kubevirt-expand.yaml": CONFIG,
        "base/db.yaml": vm("db", "u1.medium", "fedora"),
        "clusters/east/web.yaml": vm("web", "cx1.large", "rhel.9"),
        "clusters/east/typo.yaml": vm("typo", "u1.medium", "fedoraa"),
        "clusters/west/web.yaml": vm("web", "team.large", "fedora"),  # the same shop/web as east's
        "clusters/west/kind.yaml": vm("kind", "u1.small", kind="VirtualMachne"),
        "clusters/west/field.yaml": vm("field", "u1.small", disks=BUSS),
        "catalogs/west-team.yaml": TEAM,
        "rendered/east.yaml": HELM_OUTPUT,
        "charts/shop/templates/vm.yaml": "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n"
        "  name: {{ .Values.name }}\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / ".git").mkdir()  # a repository: the file is found at its root


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _run(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, list[dict[str, object]], str]:
    monkeypatch.chdir(root / "clusters")  # from a subfolder: the file is the repository's
    code = main(["expand", "--check", "-o", "jsonl", *args])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_a_repository_of_clusters_is_red_exactly_where_it_should_be_then_green(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _repository(tmp_path)
    sarif = tmp_path / "report.sarif"
    code, results, err = _run(tmp_path, monkeypatch, capsys, "--report", f"sarif={sarif}")
    assert code == 2, err  # a kind KubeVirt does not serve: the input needs fixing
    failing = {(r["cluster"], r["name"]): r for r in results if r["outcome"] != "Admitted"}
    assert set(failing) == {("east", "typo"), ("west", "kind"), ("west", "field")}, err
    # each VM of both clusters judged once per cluster: shop/web is no conflict
    admitted = sorted((r["cluster"], r["name"]) for r in results if r["outcome"] == "Admitted")
    assert admitted == [("east", "cache"), ("east", "db"), ("east", "web"), ("west", "db"), ("west", "web")]

    typo = failing[("east", "typo")]
    assert typo["outcome"] == "Missing"
    assert typo["causes"][0]["line"] == _line(tmp_path / "clusters/east/typo.yaml", "name: fedoraa")
    assert 'did you mean "fedora"' in typo["causes"][0]["message"]
    kind = failing[("west", "kind")]
    assert kind["outcome"] == "Error"
    assert kind["causes"][0]["line"] == _line(tmp_path / "clusters/west/kind.yaml", "kind:")
    assert 'did you mean "VirtualMachine"?' in kind["status"]["message"]
    field = failing[("west", "field")]
    assert field["outcome"] == "Refused"
    (cause,) = [c for c in field["causes"] if "buss" in str(c.get("field"))]
    assert cause["line"] == _line(tmp_path / "clusters/west/field.yaml", "buss:")
    # the SARIF a code-scanning upload shows: every finding at its file and line
    located = [
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in json.loads(sarif.read_text())["runs"][0]["results"]
    ]
    assert {uri.rsplit("/", 2)[-1] for uri, _ in located} == {"typo.yaml", "kind.yaml", "field.yaml"}
    assert all(line > 1 for _, line in located), located

    # fixed one by one: the run is red for what is left, then green
    (tmp_path / "clusters/west/kind.yaml").write_text(vm("kind", "u1.small"))
    assert _run(tmp_path, monkeypatch, capsys)[0] == 4  # a name the bundled catalog lacks: Missing
    (tmp_path / "clusters/east/typo.yaml").write_text(vm("typo", "u1.medium", "fedora"))
    assert _run(tmp_path, monkeypatch, capsys)[0] == 1  # the unknown field: refused
    (tmp_path / "clusters/west/field.yaml").write_text(vm("field", "u1.small"))
    code, results, err = _run(tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert {r["outcome"] for r in results} == {"Admitted"}
    # east: db, web, typo, cache; west: db, web, kind, field
    assert len(results) == 8


def test_a_bundled_catalog_in_the_file_is_the_release_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """d1 (the dedicated series) came with v1.6.0: a VM on it resolves in the cluster on v1.6.0, and is
    Missing in the one pinned to v1.5.1."""
    (tmp_path / ".kubevirt-expand.yaml").write_text(
        "catalogComplete: true\nclusters:\n"
        "  - {name: new, paths: [vms], catalog: [common-instancetypes@v1.6.0]}\n"
        "  - {name: old, paths: [vms], catalog: [common-instancetypes@v1.5.1]}\n"
    )
    (tmp_path / "vms").mkdir()
    (tmp_path / "vms/vm.yaml").write_text(vm("d", "d1.large"))
    monkeypatch.chdir(tmp_path)
    code = main(["expand", "--check", "-o", "jsonl"])
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 4
    assert {r["cluster"]: r["outcome"] for r in results} == {"new": "Admitted", "old": "Missing"}
