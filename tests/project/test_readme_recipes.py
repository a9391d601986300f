"""The recipes of README.md and docs/**/*.md, run as written where they live, so the docs cannot rot;
and every relative link among them checked (file and anchor).

Each fenced block preceded by ``<!-- recipe: KIND -->`` is run:

- ``server``: with bash (``-euo pipefail``) against ``kubevirt-expand serve --manifests examples/``,
  from a folder laid out like the repository root after ``bash hack/run.sh`` (``examples/``, the
  self-signed certificate in ``apiserver.local.config/certificates``). Only the port (``8443`` is
  taken on a shared machine) and ``/tmp/`` (one folder per test) are rewritten. curl runs with
  ``--fail-with-body``, so an HTTP error fails the recipe; kubectl fails by itself.
- ``offline``: with bash from the same folder, ``.venv`` there being the environment running the tests;
  a block that activates ``.venv`` starts without it on ``PATH``, so the activation is what finds the
  command.
- ``python``: with this Python from that folder; a line ``EXPR    # LITERAL`` must give that literal.
- ``output``: a ``$ command`` and the output shown below it, compared exactly (stdout, then stderr).
- ``helm``: an ``output`` block piping ``helm template`` into the command, run from a folder holding
  tests/cli/helm's chart (``charts/``) and tests/cli/gitops's catalog (``ci/kubevirt-catalog.yaml``). No
  registry the project's machines reach ships helm, so without ``helm`` on ``PATH`` ``helm template
  RELEASE CHART`` is replaced by ``cat`` of tests/cli/helm/rendered.yaml, that chart's output as helm
  writes it (with helm, a test checks that it is).
- ``clusters``: a repository of many clusters (tests/cli/clusters/repo): a ``yaml`` block is its
  ``.kubevirt-expand.yaml`` as the fixture holds it, a ``console`` block an ``output`` block run from a copy
  of that repository.
- ``devcluster``: run by tests/realk8s/test_dev_cluster.py (``hack/dev-cluster.sh``, a real control plane).
- ``policy``: admission policy YAML, applied as written by tests/realk8s/test_policy.py to a real
  kube-apiserver with ValidatingAdmissionPolicy on.
- ``ci``: a CI configuration (a GitHub Actions workflow, a GitLab CI job, a ``.pre-commit-config.yaml``
  using this repository's ``.pre-commit-hooks.yaml``): its commands run with bash as the CI system would
  (steps in order, ``if: failure()``/``always()`` honoured, a failing command failing the job; a GitLab
  job's lines in one shell), minus ``pip install`` (the command is installed already) and ``uses:`` actions
  other than this repository's ``action.yml``, whose steps run with the ``with:`` inputs (as GitHub runs a
  composite action); a GitLab job that extends this repository's template
  (``ci/gitlab/kubevirt-expand.gitlab-ci.yml``, named by ``include:``) runs the template's job with the
  job's variables. All in a folder whose ``vms/`` is a copy of ``examples/``: the job must pass, then fail
  once a refused VM is added.

Blocks not marked need what a test cannot have here (a cluster, virtctl, ``pip install``, a server on
port 8443) and say so beside them.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.http_helpers import EXAMPLES, REPO, ServerProcess, start_process

README = REPO / "README.md"
# Every page a recipe or a link may live on, README first.
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^<!-- recipe: ([\w-]+) -->\n```(\w+)\n(.*?)^```$", re.M | re.S)
KUBECTL = shutil.which("kubectl")
CURL = shutil.which("curl")
IN_A_VENV = sys.prefix != sys.base_prefix

# What some recipes must print, beyond exiting 0 (a part of the command -> text on stdout or stderr).
EXPECTED = {
    # a typo sent with no fieldValidation: Warn, the default, and kubectl prints the Warning
    "runStrategyy:": 'Warning: unknown field "spec.runStrategyy"',
    "kubectl version": "Server Version: v",
    "If-None-Match": "HTTP/1.1 304",
    'presets=true" -i': "Warning: 299 - ",
    "kubevirt-expand --version": "output matches KubeVirt main at d923fdb815cd",
}


KINDS = ("server", "offline", "python", "output", "ci", "helm", "clusters")
# Marked blocks run by another module: ``devcluster`` by tests/realk8s/test_dev_cluster.py, in order on one
# project copy (they start and stop a real control plane); ``devcluster-kubevirt`` by
# tests/kubevirt/test_dev_cluster_kubevirt.py; ``policy`` by tests/realk8s/test_policy.py; ``ci-catalog``
# by tests/project/test_catalog_change_recipes.py.
RUN_ELSEWHERE = ("devcluster", "devcluster-kubevirt", "policy", "ci-catalog")


@dataclass(frozen=True)
class Recipe:
    page: str  # relative to the repository root
    kind: str
    line: int
    code: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}-{self.kind}"

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line}"


def page_recipes(page: Path, *kinds: str) -> list[Recipe]:
    text = page.read_text()
    name = page.relative_to(REPO).as_posix()
    return [
        Recipe(name, m.group(1), text.count("\n", 0, m.start()) + 1, m.group(3))
        for m in BLOCK.finditer(text)
        if m.group(1) in kinds
    ]


def recipes(*kinds: str) -> list[Recipe]:
    return [recipe for page in PAGES for recipe in page_recipes(page, *kinds)]


def test_the_docs_mark_their_recipes() -> None:
    """The kinds this module runs, each at least once (so a renamed marker does not skip silently), and
    every marker on every page followed by a block this module runs."""
    assert len(PAGES) > 5, "docs/ should hold the guide's pages"
    assert {r.kind for r in recipes(*KINDS, *RUN_ELSEWHERE)} == {*KINDS, *RUN_ELSEWHERE}
    for page in PAGES:
        markers = len(re.findall(r"<!-- recipe: [\w-]+ -->", page.read_text()))
        runs = len(page_recipes(page, *KINDS, *RUN_ELSEWHERE))
        assert markers == runs, f"{page}: a recipe marker with no block it runs"


@dataclass
class Workspace:
    root: Path
    server: ServerProcess | None
    env: dict[str, str]

    def rewrite(self, code: str) -> str:
        if self.server is not None:
            code = code.replace("127.0.0.1:8443", f"127.0.0.1:{self.server.port}")
        return code.replace("/tmp/", f"{self.root}/")


def _workspace_root(tmp: Path) -> Path:
    root = tmp / "repo"
    root.mkdir()
    (root / "examples").symlink_to(EXAMPLES)
    (root / ".venv").symlink_to(Path(sys.prefix))
    return root


def _env(root: Path) -> dict[str, str]:
    bin_dir = root / "bin"
    bin_dir.mkdir()
    if CURL is not None:
        wrapper = bin_dir / "curl"
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(CURL)} --fail-with-body "$@"\n')
        wrapper.chmod(0o755)
    venv_bin = Path(sys.executable).parent
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != venv_bin]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "KUBECONFIG")}
    env["PATH"] = os.pathsep.join([str(bin_dir), str(venv_bin), *path])
    env["NO_PATH_VENV"] = os.pathsep.join([str(bin_dir), *path])
    env["COLUMNS"] = "100"
    return env


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = _workspace_root(tmp_path_factory.mktemp("readme-offline"))
    return Workspace(root, None, _env(root))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    tmp = tmp_path_factory.mktemp("readme-server")
    root = _workspace_root(tmp)
    (root / "apiserver.local.config").mkdir()
    # start_process puts the self-signed certificate in tmp/proc-certs: where hack/run.sh puts it.
    (root / "apiserver.local.config" / "certificates").symlink_to(tmp / "proc-certs")
    server = start_process(tmp, "--manifests", str(EXAMPLES))
    env = _env(root)
    # For the recipes that use a kubeconfig for this server without writing one (docs/kubectl.md's cluster
    # section, whose kubeconfig would be the user's own).
    kubeconfig = root / "expand.kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f'clusters: [{{name: expand, cluster: {{server: "{server.url}", '
        f'certificate-authority: "{server.ca_file}"}}}}]\n'
        "users: [{name: me, user: {token: unused}}]\n"
        "contexts: [{name: expand, context: {cluster: expand, user: me}}]\ncurrent-context: expand\n"
    )
    env["KUBECONFIG"] = str(kubeconfig)
    try:
        yield Workspace(root, server, env)
    finally:
        server.stop()


def run_shell(workspace: Workspace, code: str) -> subprocess.CompletedProcess[str]:
    env = dict(workspace.env)
    if ".venv/bin/activate" in code:  # the activation must be what puts the command on PATH
        env["PATH"] = env["NO_PATH_VENV"]
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", workspace.rewrite(code)],
        cwd=workspace.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def check_expected(code: str, result: subprocess.CompletedProcess[str]) -> None:
    for part, text in EXPECTED.items():
        if part in code:
            assert text in result.stdout + result.stderr, f"{part!r} should print {text!r}"


@pytest.mark.skipif(KUBECTL is None or CURL is None, reason="the recipes need kubectl and curl")
@pytest.mark.parametrize("recipe", recipes("server"), ids=lambda r: r.id)
def test_server_recipe(served: Workspace, recipe: Recipe) -> None:
    result = run_shell(served, recipe.code)
    assert result.returncode == 0, f"{recipe.where}:\n{result.stdout[-3000:]}\n{result.stderr}"
    assert result.stdout.strip()
    assert "Traceback" not in result.stdout + result.stderr
    check_expected(recipe.code, result)


@pytest.mark.skipif(not IN_A_VENV, reason="the recipes activate .venv: run the tests from a virtualenv")
@pytest.mark.parametrize("recipe", recipes("offline"), ids=lambda r: r.id)
def test_offline_recipe(offline: Workspace, recipe: Recipe) -> None:
    result = run_shell(offline, recipe.code)
    assert result.returncode == 0, f"{recipe.where}:\n{result.stdout[-3000:]}\n{result.stderr}"
    assert result.stdout.strip()
    check_expected(recipe.code, result)


_SHOWN = re.compile(r"^(?P<code>\s*\S.*?)\s{2,}# (?P<value>.+)$")


def python_with_checks(code: str) -> str:
    """``EXPR    # LITERAL`` lines become assertions when the comment is a plain Python literal."""
    lines = []
    for line in code.splitlines():
        found = _SHOWN.match(line)
        if found:
            try:
                value = ast.literal_eval(found.group("value"))
                ast.parse(found.group("code").strip(), mode="eval")
            except (ValueError, SyntaxError):
                lines.append(line)
                continue
            if "..." not in found.group("value"):
                indent = found.group("code")[: len(found.group("code")) - len(found.group("code").lstrip())]
                expr = found.group("code").strip()
                lines.append(f"{indent}assert ({expr}) == {value!r}, ({expr})")
                continue
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_python_checks_catch_a_wrong_value() -> None:
    """The rewriting above can fail a recipe (a documented value that is not what the code gives)."""
    wrong = python_with_checks("x = {'a': 1}\nx['a']    # 2\n")
    assert "assert (x['a']) == 2" in wrong
    with pytest.raises(AssertionError):
        exec(wrong, {})


@pytest.mark.parametrize("recipe", recipes("python"), ids=lambda r: r.id)
def test_python_recipe(offline: Workspace, recipe: Recipe) -> None:
    code = python_with_checks(recipe.code)
    assert code.count("assert (") >= 1, "a Python recipe should show at least one value"
    result = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-c", code],
        cwd=offline.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{recipe.where}:\n{result.stderr}"


@pytest.mark.skipif(not IN_A_VENV, reason="the recipes use the kubevirt-expand of .venv")
@pytest.mark.parametrize("recipe", recipes("output"), ids=lambda r: r.id)
def test_output_recipe(offline: Workspace, recipe: Recipe) -> None:
    first, *shown = recipe.code.splitlines()
    assert first.startswith("$ ")
    result = subprocess.run(
        ["bash", "-c", first[2:]],
        cwd=offline.root,
        env=offline.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.stdout + result.stderr).splitlines() == shown


HELM = shutil.which("helm")
HELM_FIXTURE = REPO / "tests" / "cli" / "helm"
HELM_TEMPLATE = re.compile(r"helm template (\S+) (\S+)")


def _helm_workspace(tmp: Path) -> tuple[Path, dict[str, str]]:
    root = _workspace_root(tmp)
    shutil.copytree(HELM_FIXTURE / "charts", root / "charts")
    (root / "ci").mkdir()
    shutil.copy(
        REPO / "tests" / "cli" / "gitops" / "catalog" / "common-clusterinstancetypes-bundle.yaml",
        root / "ci" / "kubevirt-catalog.yaml",
    )
    return root, _env(root)


def without_helm(command: str) -> str:
    """The pipe with the chart's rendered output in place of ``helm template RELEASE CHART``."""
    return HELM_TEMPLATE.sub(f"cat {shlex.quote(str(HELM_FIXTURE / 'rendered.yaml'))}", command)


def test_without_helm_replaces_only_helm_template() -> None:
    replaced = without_helm("helm template shop charts/shop | kubevirt-expand expand -f - --check")
    assert replaced == f"cat {HELM_FIXTURE / 'rendered.yaml'} | kubevirt-expand expand -f - --check"


@pytest.mark.skipif(not IN_A_VENV, reason="the recipes use the kubevirt-expand of .venv")
@pytest.mark.parametrize("recipe", recipes("helm"), ids=lambda r: r.id)
def test_helm_recipe(tmp_path: Path, recipe: Recipe) -> None:
    first, *shown = recipe.code.splitlines()
    assert first.startswith("$ ") and HELM_TEMPLATE.search(first), first
    root, env = _helm_workspace(tmp_path)
    command = first[2:] if HELM is not None else without_helm(first[2:])
    result = subprocess.run(
        ["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert (result.stdout + result.stderr).splitlines() == shown, command
    # Read from stdin, every document is judged or skipped: no input error.
    assert "error:" not in result.stderr, result.stderr


@pytest.mark.skipif(
    HELM is None, reason="helm is not installed (no registry the project's machines reach ships it)"
)
def test_the_rendered_fixture_is_what_helm_writes(tmp_path: Path) -> None:
    root, env = _helm_workspace(tmp_path)
    result = subprocess.run(
        [str(HELM), "template", "shop", "charts/shop"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == (HELM_FIXTURE / "rendered.yaml").read_text()


# Links: [text](target) outside code; inline code is blanked first, so `a[0](b)` is no link.
_FENCE = re.compile(r"^```.*?^```$", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)


def _prose(text: str) -> str:
    return _INLINE_CODE.sub("``", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, code marks and punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    text = _FENCE.sub("", page.read_text())
    for heading in _HEADING.findall(text):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    found.update(re.findall(r'<a (?:id|name)="([^"]+)"', text))
    return found


def test_slugs_are_githubs() -> None:
    """Anchors as GitHub makes them (the ones this repository's links rely on)."""
    assert slug("Field validation (`?fieldValidation=`, `--field-validation`, `field_validation=`)") == (
        "field-validation-fieldvalidation---field-validation-field_validation"
    )
    assert slug("On a cluster (through the aggregator)") == "on-a-cluster-through-the-aggregator"
    assert slug("Legacy ControllerRevisions and flavors") == "legacy-controllerrevisions-and-flavors"


def links(page: Path) -> list[str]:
    return [
        target
        for target in _LINK.findall(_prose(page.read_text()))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        file_part, _, anchor = target.partition("#")
        path = (page.parent / file_part).resolve() if file_part else page
        if not path.exists():
            broken.append(f"{target}: no file {path}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading with anchor #{anchor} in {path.name}")
    return broken


def test_the_link_check_catches_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## A part\n\n[ok](#a-part) [bad](#no-part) [gone](missing.md) `[code](x.md)`\n"
    )
    assert broken_links(page) == [
        "#no-part: no heading with anchor #no-part in page.md",
        f"missing.md: no file {tmp_path / 'missing.md'}",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_reach_a_file_and_heading(page: Path) -> None:
    assert broken_links(page) == []


# --- CI configurations -----------------------------------------------------------------------------------

CI_INSTALL = re.compile(r"^\s*pip install ")
REFUSED_VM = """\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: refused
spec:
  runStrategy: Halted
  instancetype:
    name: cmedium
    kind: VirtualMachineInstancetype
  template:
    spec:
      domain:
        cpu:
          cores: 4
        devices: {}
"""
# The field KubeVirt's webhook names in its refusal (a conflict with the instancetype's CPU).
REFUSED_FIELD_TEXT = "cores: 4"


@dataclass(frozen=True)
class CiStep:
    command: str
    when: str = "success"  # GitHub's if: success() (the default), failure() or always()
    env: tuple[tuple[str, str], ...] = ()  # the step's env: (GitHub) or the job's variables (GitLab)
    writes: tuple[str, ...] = ()  # the reports it must write, whatever the verdict


ACTION = REPO / "action.yml"
GITLAB_TEMPLATE = REPO / "ci" / "gitlab" / "kubevirt-expand.gitlab-ci.yml"
# How the docs name this repository's action (``OWNER/kubevirt-expand-apiserver@v0.1.0``, or ``./``).
THIS_ACTION = re.compile(r"^(?:\./?|[\w.-]+/kubevirt-expand-apiserver@[\w.-]+)$")
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def action_value(expression: str, inputs: dict[str, str], outputs: dict[str, str]) -> Any:
    """A GitHub expression of the kinds action.yml uses: ``inputs.NAME``, ``steps.ID.outputs.NAME``,
    ``github.*`` (empty here), ``always()``, comparisons with quoted strings, ``&&`` and ``||``."""

    def name(found: re.Match[str]) -> str:
        word = found.group(0)
        if word.startswith("inputs."):
            return repr(inputs[word.removeprefix("inputs.")])
        if word.startswith("steps."):
            return repr(outputs.get(word.rsplit(".", 1)[1], ""))
        return repr("")  # github.action_ref and the like: not known to a local run

    python = re.sub(r"\b(?:inputs|steps|github)\.[\w.-]+", name, expression)
    python = python.replace("always()", "True").replace("&&", " and ").replace("||", " or ")
    return eval(python, {"__builtins__": {}})


def action_steps(step: dict[str, Any]) -> list[CiStep]:
    """The run steps of this repository's composite action as a workflow's ``uses:`` runs them: inputs from
    ``with:`` and their defaults; the installation (pip) left out, as for every recipe."""
    action = yaml.safe_load(ACTION.read_text())
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    unknown = set(step.get("with", {})) - set(inputs)
    assert not unknown, f"inputs action.yml does not have: {sorted(unknown)}"
    inputs.update({k: str(v) for k, v in step.get("with", {}).items()})
    steps = []
    for inner in action["runs"]["steps"]:
        if "run" not in inner or "pip install" in inner["run"]:
            continue
        condition = str(inner.get("if", "success()"))
        when = "always" if condition.startswith("always()") else "success"
        if condition not in ("success()", "always()") and not action_value(condition, inputs, {}):
            continue
        env = tuple((k, str(v)) for k, v in inner.get("env", {}).items())
        writes = (inputs["report"], inputs["sarif"], inputs["junit"]) if inner.get("id") == "gate" else ()
        steps.append(CiStep(inner["run"], when, env, writes))
    return _with_inputs(steps, inputs)


def _with_inputs(steps: list[CiStep], inputs: dict[str, str]) -> list[CiStep]:
    """Each step's env with its ``${{ inputs.X }}`` resolved; ``steps.*`` outputs are resolved when the step
    runs (run_ci), from what the earlier steps wrote to GITHUB_OUTPUT."""
    out = []
    for step in steps:
        env = []
        for key, value in step.env:
            if "steps." not in value:
                value = _EXPRESSION.sub(lambda m: str(action_value(m.group(1), inputs, {})), value)
            env.append((key, value))
        out.append(CiStep(step.command, step.when, tuple(env), step.writes))
    return out


def gitlab_job(config: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """The job as GitLab runs it: a job that ``extends:`` the template included from this repository gets
    the template's keys, its own keys winning and the variables merged."""
    if job.get("extends") != ".kubevirt-expand":
        return job
    includes = config.get("include", [])
    assert any(GITLAB_TEMPLATE.relative_to(REPO).as_posix() in str(i) for i in includes), includes
    template = yaml.safe_load(GITLAB_TEMPLATE.read_text())[".kubevirt-expand"]
    merged = {**template, **{k: v for k, v in job.items() if k != "extends"}}
    merged["variables"] = {**template.get("variables", {}), **job.get("variables", {})}
    return merged


def ci_steps(text: str) -> list[CiStep]:
    """The commands a CI configuration runs, in order, with when each runs."""
    config = yaml.safe_load(text)
    if "jobs" in config:  # GitHub Actions: the run steps, and this repository's action's
        conditions = {"failure()": "failure", "always()": "always"}
        steps: list[CiStep] = []
        for job in config["jobs"].values():
            for step in job["steps"]:
                if "run" in step:
                    steps.append(CiStep(step["run"], conditions.get(step.get("if", ""), "success")))
                elif THIS_ACTION.match(step.get("uses", "")):
                    steps += action_steps(step)
        return steps
    if "repos" in config:  # pre-commit: each hook's entry (from this repository's hooks) with its args
        hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
        return [
            CiStep(shlex.join([*shlex.split(hooks[hook["id"]]["entry"]), *hook.get("args", [])]))
            for repo in config["repos"]
            for hook in repo["hooks"]
        ]
    # GitLab CI: each job's before_script and script lines, in one shell (as GitLab runs them), with its
    # variables; a hidden job (a template) runs only as what extends it
    jobs = [
        gitlab_job(config, job)
        for name, job in config.items()
        if isinstance(job, dict) and not name.startswith(".") and name not in ("include", "variables")
    ]
    return [
        CiStep(
            "\n".join(
                line for line in [*job.get("before_script", []), *job["script"]] if not CI_INSTALL.match(line)
            ),
            env=tuple((k, str(v)) for k, v in job.get("variables", {}).items()),
        )
        for job in jobs
        if "script" in job
    ]


def resolve_outputs(value: str, outputs: dict[str, str]) -> str:
    """``${{ steps.ID.outputs.NAME }}`` in a step's env, from what earlier steps wrote to GITHUB_OUTPUT."""
    return _EXPRESSION.sub(lambda m: str(action_value(m.group(1), {}, outputs)), value)


def run_ci(root: Path, env: dict[str, str], steps: list[CiStep]) -> tuple[bool, str]:
    """(whether the job failed, everything its commands printed)."""
    failed, printed = False, ""
    github_output = root / "github-output"
    github_output.write_text("")
    for step in steps:
        if (step.when == "success" and failed) or (step.when == "failure" and not failed):
            continue
        if CI_INSTALL.match(step.command):
            continue
        outputs = dict(line.split("=", 1) for line in github_output.read_text().splitlines() if "=" in line)
        step_env = {k: resolve_outputs(v, outputs) for k, v in step.env}
        result = subprocess.run(
            ["bash", "-e", "-c", step.command],
            cwd=root,
            env={**env, **step_env, "GITHUB_OUTPUT": str(github_output)},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        printed += result.stdout + result.stderr
        failed = failed or result.returncode != 0
    return failed, printed


def test_ci_steps_read_each_system() -> None:
    github = ci_steps(
        "jobs: {a: {steps: [{uses: x}, {run: pip install y}, {run: check}, {run: note, if: failure()}]}}"
    )
    assert github == [CiStep("pip install y"), CiStep("check"), CiStep("note", "failure")]
    gitlab = ci_steps(
        "job: {before_script: [a, pip install x], script: [b], variables: {X: 1}}\nvariables: {}"
    )
    assert gitlab == [CiStep("a\nb", env=(("X", "1"),))]
    extended = ci_steps(
        f"include: [{{remote: 'https://x/{GITLAB_TEMPLATE.relative_to(REPO)}'}}]\n"
        "vms: {extends: .kubevirt-expand, variables: {KUBEVIRT_EXPAND_PATHS: vms/}}"
    )
    assert len(extended) == 1 and "kubevirt-expand expand" in extended[0].command
    assert ("KUBEVIRT_EXPAND_PATHS", "vms/") in extended[0].env
    assert ("KUBEVIRT_EXPAND_ARGS", "--validate") in extended[0].env  # the template's default
    action = ci_steps("jobs: {a: {steps: [{uses: o/kubevirt-expand-apiserver@v1.2.3, with: {paths: vms/}}]}}")
    gate = next(step for step in action if step.writes)
    assert ("PATHS", "vms/") in gate.env and ("FORMAT", "jsonl") in gate.env
    assert not any("pip install" in step.command for step in action)
    hook = ci_steps("repos: [{repo: r, rev: v, hooks: [{id: kubevirt-expand, args: [-f, 'a b/']}]}]")
    assert hook == [CiStep("kubevirt-expand expand --check -f 'a b/'")]


@pytest.mark.skipif(not IN_A_VENV, reason="the recipes use the kubevirt-expand of .venv")
@pytest.mark.parametrize("recipe", recipes("ci"), ids=lambda r: r.id)
def test_ci_recipe(tmp_path: Path, recipe: Recipe) -> None:
    steps = ci_steps(recipe.code)
    assert any("kubevirt-expand" in step.command for step in steps), steps
    if shutil.which("jq") is None and any("jq " in step.command for step in steps):
        pytest.skip("the recipe uses jq, which is not installed")
    root = _workspace_root(tmp_path)
    env = _env(root)
    shutil.copytree(EXAMPLES, root / "vms")
    failed, printed = run_ci(root, env, steps)
    assert not failed, f"{recipe.where}:\n{printed[-3000:]}"
    (root / "vms" / "refused.yaml").write_text(REFUSED_VM)
    failed, printed = run_ci(root, env, steps)
    assert failed, f"{recipe.where}: a refused VM should fail the job\n{printed[-3000:]}"
    if any("::error" in step.command for step in steps):  # GitHub's annotations, at the refused field's line
        line = next(i for i, text in enumerate(REFUSED_VM.splitlines(), 1) if REFUSED_FIELD_TEXT in text)
        assert f"::error file=vms/refused.yaml,line={line},title=Refused::" in printed, printed[-3000:]
    reports = [name for step in steps for name in step.writes]
    for line in (line for step in steps for line in step.command.splitlines()):
        if line.startswith("kubevirt-expand "):
            reports += [a or b for a, b in re.findall(r"--report \w+=(\S+)|> (\S+)", line)]
    for report in reports:  # the reports the job keeps, written whatever the verdict
        path = root / report
        assert path.is_file() and path.stat().st_size, f"{recipe.where}: {path.name} not written"


# A release is tagged v and its version (docs/ci-automation.md#releases-and-pinning): what setuptools-scm
# reads as the version (tests/project/test_release.py).
RELEASE_TAG = re.compile(r"v\d+\.\d+\.\d+")
FULL_SHA = re.compile(r"[0-9a-f]{40}")


def test_ci_recipes_pin_a_release() -> None:
    """Every revision a recipe installs (pip, ``uses:``, pre-commit's ``rev:``, the GitLab template's
    include and variable) is a release tag or a full commit SHA, the same release everywhere, as the
    pinning section says; never a branch or a placeholder."""
    pins = [
        next(p for p in pin if p)
        for recipe in recipes("ci")
        for pin in re.findall(
            r"kubevirt-expand-apiserver@([\w.-]+)|^\s*rev: *([\w.-]+)|kubevirt-expand-apiserver/([\w.-]+)/ci/"
            r"|KUBEVIRT_EXPAND_VERSION: *([\w.-]+)",
            recipe.code,
            re.M,
        )
    ]
    assert len(pins) >= 4, "the CI recipes should pin a revision"
    for pin in pins:
        assert RELEASE_TAG.fullmatch(pin) or FULL_SHA.fullmatch(pin), f"{pin}: not a release tag or a commit"
    assert len(set(pins)) == 1, f"the recipes pin different releases: {sorted(set(pins))}"
    pinning = (REPO / "docs" / "ci-automation.md").read_text().split("### Releases and pinning")[1]
    assert pins[0] in pinning.split("\n### ")[0], "the pinning section names the release the recipes pin"


CLUSTERS_FIXTURE = REPO / "tests" / "cli" / "clusters" / "repo"


@pytest.mark.skipif(not IN_A_VENV, reason="the recipes use the kubevirt-expand of .venv")
@pytest.mark.parametrize("recipe", recipes("clusters"), ids=lambda r: r.id)
def test_clusters_recipe(tmp_path: Path, recipe: Recipe) -> None:
    if not recipe.code.startswith("$ "):  # the configuration file, as the repository the test runs holds it
        assert recipe.code == (CLUSTERS_FIXTURE / ".kubevirt-expand.yaml").read_text()
        return
    first, *shown = recipe.code.splitlines()
    root = _workspace_root(tmp_path)
    shutil.copytree(CLUSTERS_FIXTURE, root, dirs_exist_ok=True)
    (root / ".git").mkdir()
    result = subprocess.run(
        ["bash", "-c", first[2:]],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.stdout + result.stderr).splitlines() == shown, first
