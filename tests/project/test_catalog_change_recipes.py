"""docs/catalog-changes.md's CI recipes (``<!-- recipe: ci-catalog -->``), run as a CI system would run
them in a repository whose base branch holds common-instancetypes v1.6.0 in ``catalog/`` and a fleet in
``vms/``: a pull request upgrading the catalog to v1.7.0 fails the job (an arm64 VM with the amd64-only
``fedora`` preference is refused once upgraded), one editing a preference no VM uses passes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.project.test_readme_recipes import IN_A_VENV, _env, _workspace_root, ci_steps, recipes, run_ci
from tests.support.shared import SHARED, needs_shared

COMMON = SHARED / "catalogs" / "common-instancetypes"
FLEET = """\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: web, namespace: team-a}
spec:
  runStrategy: Always
  instancetype: {name: u1.medium}
  preference: {name: fedora}
  template: {spec: {domain: {devices: {}}}}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: arm, namespace: team-a}
spec:
  runStrategy: Always
  instancetype: {name: u1.medium}
  preference: {name: fedora}
  template: {spec: {architecture: arm64, domain: {devices: {}}}}
"""
# GitHub's and GitLab's names of the base branch, and GitHub's step summary.
CI_VARIABLES = {"GITHUB_BASE_REF": "main", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _repository(tmp: Path) -> Path:
    """A clone (``origin`` a bare repository whose main holds v1.6.0 and the fleet), checked out on a
    pull request's branch."""
    seed = tmp / "seed"
    (seed / "catalog").mkdir(parents=True)
    (seed / "vms").mkdir()
    for path in (COMMON / "v1.6.0").glob("*.yaml"):
        shutil.copy(path, seed / "catalog" / path.name)
    (seed / "vms" / "fleet.yaml").write_text(FLEET)
    _git(seed, "init", "-q", "-b", "main")
    _git(seed, "add", ".")
    _git(seed, "commit", "-qm", "v1.6.0")
    _git(tmp, "clone", "-q", "--bare", str(seed), "origin.git")
    root = _workspace_root(tmp)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "remote", "add", "origin", str(tmp / "origin.git"))
    _git(root, "fetch", "-q", "origin")
    _git(root, "checkout", "-q", "-b", "pr", "origin/main")
    return root


def _upgrade(root: Path) -> None:
    for path in (COMMON / "v1.7.0").glob("*.yaml"):
        shutil.copy(path, root / "catalog" / path.name)


def _edit_unused_preference(root: Path) -> None:
    path = root / "catalog" / "clusterpreferences.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    (alpine,) = [d for d in docs if d and d["metadata"]["name"] == "alpine"]
    alpine["metadata"].setdefault("labels", {})["team"] = "platform"
    path.write_text(yaml.safe_dump_all(docs))


def test_the_catalog_page_has_a_recipe_for_each_system() -> None:
    systems = {"github" if "jobs" in yaml.safe_load(r.code) else "gitlab" for r in recipes("ci-catalog")}
    assert systems == {"github", "gitlab"}


@needs_shared
@pytest.mark.skipif(not IN_A_VENV, reason="the recipes use the kubevirt-expand of .venv")
@pytest.mark.parametrize("recipe", recipes("ci-catalog"), ids=lambda r: r.id)
@pytest.mark.parametrize(("change", "fails"), [(_upgrade, True), (_edit_unused_preference, False)])
def test_catalog_change_recipe(tmp_path: Path, recipe: object, change: object, fails: bool) -> None:
    steps = ci_steps(recipe.code)  # type: ignore[attr-defined]
    root = _repository(tmp_path)
    env = {**_env(root), **CI_VARIABLES, "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    change(root)  # type: ignore[operator]
    _git(root, "commit", "-qam", "catalog change")
    failed, printed = run_ci(root, env, steps)
    assert failed == fails, f"{recipe.where}:\n{printed[-3000:]}"  # type: ignore[attr-defined]
    written = [p for p in root.glob("catalog-preview.*")]
    assert written, "the job keeps its preview"
    text = written[0].read_text()
    for report in re.findall(r"--report \w+=(\S+)", recipe.code):  # type: ignore[attr-defined]
        assert (root / report).is_file(), f"{report} not written"
    if fails:
        assert "arm" in text and "refused" in text and "preference requires architecture amd64" in text
    else:
        assert '"verdict": "refused"' not in text and "refused" not in text.splitlines()[0]
