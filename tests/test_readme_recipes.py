"""The README's recipes, run as written, so the README cannot rot.

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

import pytest

from tests.http_helpers import EXAMPLES, REPO, ServerProcess, start_process

README = REPO / "README.md"
BLOCK = re.compile(r"^<!-- recipe: (\w+) -->\n```(\w+)\n(.*?)^```$", re.M | re.S)
KUBECTL = shutil.which("kubectl")
CURL = shutil.which("curl")
IN_A_VENV = sys.prefix != sys.base_prefix

# What some recipes must print, beyond exiting 0 (a part of the command -> text on stdout or stderr).
EXPECTED = {
    "fieldValidation=Warn": 'Warning: unknown field "spec.runStrategyy"',
    "kubectl version": "Server Version: v",
    "If-None-Match": "HTTP/1.1 304",
    'presets=true" -i': "Warning: 299 - ",
    "kubevirt-expand --version": "output matches KubeVirt main at d923fdb815cd",
}


@dataclass(frozen=True)
class Recipe:
    kind: str
    line: int
    code: str

    @property
    def id(self) -> str:
        return f"{self.kind}-line{self.line}"


def recipes(*kinds: str) -> list[Recipe]:
    text = README.read_text()
    return [
        Recipe(m.group(1), text.count("\n", 0, m.start()) + 1, m.group(3))
        for m in BLOCK.finditer(text)
        if m.group(1) in kinds
    ]


def test_the_readme_marks_its_recipes() -> None:
    """The kinds this module runs, each at least once (so a renamed marker does not skip silently)."""
    found = {r.kind for r in recipes("server", "offline", "python", "output")}
    assert found == {"server", "offline", "python", "output"}
    text = README.read_text()
    assert len(re.findall(r"<!-- recipe: \w+ -->", text)) == len(
        recipes("server", "offline", "python", "output")
    )


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
    # For the recipes that use the kubeconfig the README writes first (the cluster section's).
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
    assert result.returncode == 0, f"README line {recipe.line}:\n{result.stdout[-3000:]}\n{result.stderr}"
    assert result.stdout.strip()
    assert "Traceback" not in result.stdout + result.stderr
    check_expected(recipe.code, result)


@pytest.mark.skipif(not IN_A_VENV, reason="the recipes activate .venv: run the tests from a virtualenv")
@pytest.mark.parametrize("recipe", recipes("offline"), ids=lambda r: r.id)
def test_offline_recipe(offline: Workspace, recipe: Recipe) -> None:
    result = run_shell(offline, recipe.code)
    assert result.returncode == 0, f"README line {recipe.line}:\n{result.stdout[-3000:]}\n{result.stderr}"
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
    """The rewriting above can fail a recipe (a README value that is not what the code gives)."""
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
    assert result.returncode == 0, f"README line {recipe.line}:\n{result.stderr}"


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
