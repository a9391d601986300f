"""This repository's GitHub Action (action.yml) and GitLab CI template (ci/gitlab/kubevirt-expand.gitlab-ci.yml)
as docs/ci-automation.md documents them: valid, with the inputs and variables the recipes use, installing the
pinned release and running the command the page says. tests/project/test_readme_recipes.py runs the recipes
that use them on a sample tree (the job passes, then fails on a refused VM, and writes its reports)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.project.test_readme_recipes import ACTION, GITLAB_TEMPLATE, REPO, recipes

DOCS = REPO / "docs" / "ci-automation.md"
# A kubevirt-expand (and python3, pip) that print the command they were given, as a shell word list.
STUB = '#!/bin/sh\nprintf "%s" "$(basename "$0")"; for a in "$@"; do printf " %s" "$a"; done; echo\n'


def documented(sentence: str) -> str:
    """The command the page quotes after ``sentence`` (in backticks, wrapped over lines)."""
    found = re.search(re.escape(sentence) + r" `([^`]+)`", DOCS.read_text())
    assert found, f"docs/ci-automation.md should say: {sentence} `...`"
    return " ".join(found.group(1).split())


def stubs(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("kubevirt-expand", "python3", "pip"):
        (bin_dir / name).write_text(STUB)
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def recipe_yaml(marker: str) -> dict[str, Any]:
    (found,) = [r for r in recipes("ci") if marker in r.code]
    config: dict[str, Any] = yaml.safe_load(found.code)
    return config


# --- the GitHub Action ---------------------------------------------------------------------------------


def action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(ACTION.read_text())
    return loaded


def the_docs_step() -> dict[str, Any]:
    workflow = recipe_yaml("kubevirt-expand-apiserver@")
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    (step,) = [s for s in steps if "kubevirt-expand-apiserver@" in s.get("uses", "")]
    return step


def test_the_action_is_a_composite_action_with_the_inputs_the_docs_use() -> None:
    spec = action()
    assert spec["runs"]["using"] == "composite"
    assert spec["name"] and spec["description"]
    inputs = spec["inputs"]
    assert all(i.get("description") for i in inputs.values())
    assert set(the_docs_step()["with"]) <= set(inputs)
    # The docs' table names every input (a row's first cell lists one or more, in backticks).
    table = DOCS.read_text().split("Its inputs (all optional):")[1].split("\n\n")[1]
    listed = {name for row in table.splitlines()[2:] for name in re.findall(r"`([\w-]+)`", row.split("|")[1])}
    assert listed == set(inputs)
    for step in spec["runs"]["steps"]:
        if "run" in step:
            assert step.get("shell") == "bash", step  # a composite action's run steps need a shell
        else:
            assert re.fullmatch(r"[\w-]+/[\w/-]+@v\d+", step["uses"]), step["uses"]
    uploads = {s["uses"].split("@")[0] for s in spec["runs"]["steps"] if "uses" in s}
    assert {"github/codeql-action/upload-sarif", "actions/upload-artifact"} <= uploads


def run_action_step(step_id: str, env: dict[str, str], tmp_path: Path) -> str:
    """One run step of the action, its ``${{ ... }}`` in env: given by ``env`` (as the runner sets them)."""
    (step,) = [s for s in action()["runs"]["steps"] if s.get("id") == step_id or s.get("name") == step_id]
    output = tmp_path / "github-output"
    output.write_text("")
    result = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        env={**stubs(tmp_path), **env, "GITHUB_OUTPUT": str(output)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_the_action_installs_the_release_it_is_used_at(tmp_path: Path) -> None:
    uses = the_docs_step()["uses"]
    repository, _, ref = uses.partition("@")
    printed = run_action_step(
        "Install kubevirt-expand",
        {"ACTION_REF": ref, "ACTION_REPOSITORY": repository, "VERSION": ""},
        tmp_path,
    )
    requirement = f"kubevirt-expand-apiserver @ git+https://github.com/{repository}@{ref}"
    assert printed.splitlines()[0] == f"python3 -m pip install -q {requirement}"
    printed = run_action_step(
        "Install kubevirt-expand",
        {"ACTION_REF": ref, "ACTION_REPOSITORY": repository, "VERSION": "v9.9.9"},
        tmp_path,
    )
    assert printed.splitlines()[0].endswith("@v9.9.9")


def test_the_action_runs_the_documented_command(tmp_path: Path) -> None:
    inputs = {k: str(v.get("default", "")) for k, v in action()["inputs"].items()}
    inputs.update({k: str(v) for k, v in the_docs_step()["with"].items()})
    env = {k.upper(): inputs[k] for k in ("paths", "catalog", "args", "format", "report", "sarif", "junit")}
    run_action_step("gate", env, tmp_path)
    ran = (tmp_path / inputs["report"]).read_text().strip()
    command = documented("The step runs")
    assert f"{ran} > {inputs['report']}" == command


# --- the GitLab CI template -------------------------------------------------------------------------------


def template() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(GITLAB_TEMPLATE.read_text())
    return loaded


def test_the_gitlab_template_is_a_hidden_job_with_reports() -> None:
    jobs = template()
    assert list(jobs) == [".kubevirt-expand"]
    job = jobs[".kubevirt-expand"]
    assert job["artifacts"]["when"] == "always"
    assert set(job["artifacts"]["reports"]) == {"junit", "codequality"}
    assert all(name.startswith("KUBEVIRT_EXPAND_") for name in job["variables"])
    include = recipe_yaml("extends: .kubevirt-expand")
    (remote,) = [i["remote"] for i in include["include"]]
    assert remote.endswith("/" + GITLAB_TEMPLATE.relative_to(REPO).as_posix())
    assert set(include["vms"]["variables"]) <= set(job["variables"])


def run_gitlab_job(variables: dict[str, str], tmp_path: Path) -> str:
    """The template's job as GitLab runs it (its lines in one shell), with the recipe's variables."""
    job = template()[".kubevirt-expand"]
    env = {**stubs(tmp_path), **{k: str(v) for k, v in {**job["variables"], **variables}.items()}}
    result = subprocess.run(
        ["bash", "-e", "-c", "\n".join([*job["before_script"], *job["script"]])],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout + result.stderr + (tmp_path / "kubevirt-expand-junit.xml").read_text()


def test_the_gitlab_template_installs_the_release_and_runs_the_documented_command(tmp_path: Path) -> None:
    variables = recipe_yaml("extends: .kubevirt-expand")["vms"]["variables"]
    printed = run_gitlab_job(variables, tmp_path).splitlines()
    requirement = (
        f"kubevirt-expand-apiserver @ git+{variables['KUBEVIRT_EXPAND_REPOSITORY']}"
        f"@{variables['KUBEVIRT_EXPAND_VERSION']}"
    )
    assert printed[0] == f"pip install -q {requirement}"
    ran = printed[-1]
    assert f"{ran} > kubevirt-expand-junit.xml" == documented("The job runs")


def test_the_gitlab_template_needs_the_release_named(tmp_path: Path) -> None:
    job = template()[".kubevirt-expand"]
    result = subprocess.run(
        ["bash", "-e", "-c", "\n".join(job["before_script"])],
        env={**stubs(tmp_path), **{k: str(v) for k, v in job["variables"].items()}},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "set KUBEVIRT_EXPAND_REPOSITORY and KUBEVIRT_EXPAND_VERSION" in result.stdout
