"""``kubevirt-expand expand`` on a GitOps repository (tests/cli/gitops/repo): VMs that use common-instancetypes'
names (``u1.medium``, ``fedora``, the deprecated ``gn1.xlarge``) beside a Kustomization, ConfigMaps, a Helm
chart's sources and rendered output, and CI workflow files.

With the catalog (tests/cli/gitops/catalog, shaped as common-instancetypes' release bundle) every VM gets
KubeVirt's verdict: the one ``tests/cli/gitops/oracle.json`` records from KubeVirt's own code
(``hack/oracle/gitops_verdicts.py``: expand-oracle's expanded VM or error, expand-admit's webhook verdict).
Without it every VM the webhook admits is ``Unresolved`` (exit 3). What is not KubeVirt's is skipped and
counted, never an error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_expand_gate import COMMAND

HERE = Path(__file__).parent / "gitops"
BUNDLE = "catalog/common-clusterinstancetypes-bundle.yaml"
ORACLE: dict[str, Any] = json.loads((HERE / "oracle.json").read_text())
SKIPPED = (
    "skipped: 2 ConfigMap, 1 Deployment, 1 Kustomization, 1 Service; 3 documents that are no Kubernetes "
    "objects (repo/charts/web/Chart.yaml, repo/charts/web/values.yaml, repo/ci/build.yaml); "
    "1 file or folder excluded"
)
DEPRECATED = (
    "VirtualMachineClusterInstancetype gn1.xlarge is deprecated (label instancetype.kubevirt.io/deprecated=true) "
    "and may be removed in a future release"
)


def run(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, "expand", "-f", "repo", *args, "-o", "jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def results(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    """The report's VM lines by namespace/name (the fixture's VM names are unique)."""
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert all(r["kind"] == "VirtualMachine" for r in lines), proc.stdout
    return {f"{r['namespace']}/{r['name']}": r for r in lines}


def causes(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in status["details"]["causes"]]


def test_with_the_catalog_every_vm_gets_kubevirts_verdict() -> None:
    proc = run("--catalog", BUNDLE, "--exclude", "templates", "--validate")
    got = results(proc)
    assert sorted(got) == sorted(ORACLE)
    refused = 0
    for key, answer in ORACLE.items():
        mine, kubevirt = got[key], answer["withCatalog"]
        assert mine["file"] == f"repo/{answer['file']}"
        if not kubevirt["admit"]["allowed"]:
            refused += 1
            assert mine["outcome"] == "Refused", key
            assert causes(mine["status"]) == [(c["field"], c["message"]) for c in kubevirt["admit"]["causes"]]
        else:
            assert mine["outcome"] == "Admitted", (key, mine["status"])
            # The very VM virt-api's expand-spec answers, member order included.
            assert json.dumps(mine["object"]) == json.dumps(kubevirt["expand"]["expanded"]), key
    assert refused == 1
    assert proc.returncode == 1, proc.stderr
    stderr = proc.stderr.splitlines()
    assert (
        stderr[0] == "catalog: 1 file: 3 VirtualMachineClusterInstancetype, 1 VirtualMachineClusterPreference"
    )
    assert SKIPPED in stderr
    assert stderr[-1] == "summary: 5 VMs, 4 admitted, 1 refused, 0 errors, 10 files, 9 skipped"
    # The deprecated instancetype is named, on stderr and in the report, for the VM that uses it only.
    assert f"Warning: repo/vms/gpu.yaml: document 1: shop/render-farm: {DEPRECATED}" in stderr
    assert [key for key, r in got.items() if r["warnings"]] == ["shop/render-farm"]
    assert got["shop/render-farm"]["warnings"] == [DEPRECATED]


def test_without_the_catalog_the_vms_are_unresolved_not_refused() -> None:
    proc = run("--exclude", "templates", "--validate")
    got = results(proc)
    for key, answer in ORACLE.items():
        kubevirt = answer["withoutCatalog"]
        # KubeVirt's webhook admits each (it ignores what it cannot find); expand-spec cannot render it.
        assert kubevirt["admit"]["allowed"] and kubevirt["expand"]["kind"] == "notfound", key
        assert got[key]["outcome"] == "Unresolved", key
        assert got[key]["status"]["message"] == kubevirt["expand"]["error"]
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[-1] == "summary: 5 VMs, 0 admitted, 0 refused, 5 unresolved, 0 errors, 10 files, 9 skipped"
    assert lines[-2].startswith("note: 5 VMs are unresolved: they name an instancetype, preference or ")
    assert "--catalog" in lines[-2]


def test_a_bundle_as_one_list_reads_the_same(tmp_path: Path) -> None:
    shutil.copytree(HERE / "repo", tmp_path / "repo")
    docs = [d for d in yaml.safe_load_all((HERE / BUNDLE).read_text()) if d]
    listed = {"apiVersion": "v1", "kind": "List", "items": docs}
    (tmp_path / "bundle.yaml").write_text(yaml.safe_dump(listed))
    as_list = run("--catalog", "bundle.yaml", "--exclude", "templates", "--validate", cwd=tmp_path)
    as_documents = run("--catalog", BUNDLE, "--exclude", "templates", "--validate")
    assert as_list.returncode == as_documents.returncode == 1
    assert as_list.stdout == as_documents.stdout


def test_the_charts_templates_are_broken_yaml_unless_excluded() -> None:
    proc = run("--catalog", BUNDLE, "--validate")
    assert proc.returncode == 2
    assert "error: repo/charts/web/templates/deployment.yaml: document 1, line 4: " in proc.stderr
    # Every VM is judged all the same.
    assert [r["outcome"] for r in results_of_vms(proc)].count("Admitted") == 4


def results_of_vms(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, proc.stdout.splitlines()) if r["kind"] == "VirtualMachine"]


@pytest.mark.parametrize(
    ("exclude", "code", "vms"),
    [
        (["templates", "oversized.yaml"], 0, 4),  # a name anywhere
        (["templates", "vms/over*"], 0, 4),  # the end of a path
        (["templates", "repo/vms"], 0, 1),  # a folder with all it holds
        (["charts", "rendered/"], 1, 4),
    ],
)
def test_exclude(exclude: list[str], code: int, vms: int) -> None:
    args = [a for pattern in exclude for a in ("--exclude", pattern)]
    proc = run("--catalog", BUNDLE, "--validate", *args)
    assert proc.returncode == code, proc.stderr
    assert len(results_of_vms(proc)) == vms
    assert f"{len(exclude)} files and folders excluded" in proc.stderr


def test_skip_kind() -> None:
    proc = run("--catalog", BUNDLE, "--exclude", "templates", "--skip-kind", "VirtualMachine")
    assert proc.returncode == 2  # nothing left to check
    assert "error: no VirtualMachine found in repo" in proc.stderr
    assert "5 VirtualMachine" in proc.stderr
