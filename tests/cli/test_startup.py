"""What ``kubevirt-expand expand`` imports on one file: the renderer and the manifest reader, nothing the
server needs (aiohttp, kubernetes_asyncio, prometheus_client, cryptography, watchfiles; see
apiserver/cli/__init__.py) and nothing a run of this shape does not use: pydantic and the instancetype
models, old shapes or current (apiserver/render/instancetype/revision.py: a current object's spec is read
without them), the XML library of ``-o junit``. A pre-commit hook runs
the command on every commit, so its start-up counts (hack/benchmarks/cli.py measures it).

The modules are read in a child, after the run, so each test sees a fresh interpreter; the same child with
the options that need a deferred module shows that the check can see it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_expand_gate import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
ONE_VM = [str(EXAMPLES / name) for name in ("vm-fedora.yaml", "instancetypes.yaml", "preferences.yaml")]
SERVER_ONLY = ("aiohttp", "kubernetes_asyncio", "prometheus_client", "cryptography", "watchfiles")
NOT_ON_THE_BASE_PATH = (
    *SERVER_ONLY,
    "apiserver.cli.serve",
    "apiserver.cli.config",  # only with a .kubevirt-expand.yaml
    "apiserver.cli.webhookfields",  # only for a refusal under --validate
    "apiserver.http",
    "apiserver.sources",
    "pydantic",
    "pydantic_core",
    "apiserver.render.instancetype.models.v1beta1",
    "apiserver.render.instancetype.models.v1alpha",
    "xml.etree.ElementTree",
)

CHILD = """\
import contextlib, io, json, sys
from apiserver.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def imported_by(*args: str, stdin: str | None = None) -> tuple[int, set[str]]:
    """(exit code, every module imported) of one ``kubevirt-expand`` run in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
        check=True,
    )
    answer = json.loads(proc.stdout)
    return answer["code"], set(answer["modules"])


def loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


@pytest.mark.parametrize("output", ["yaml", "jsonl", "sarif"])
def test_expand_on_one_file_imports_only_what_it_uses(output: str) -> None:
    code, modules = imported_by("expand", *(a for f in ONE_VM for a in ("-f", f)), "--check", "-o", output)
    assert code == 0
    assert "apiserver.render.instancetype.models.plain" in modules  # the renderer did run
    assert [name for name in NOT_ON_THE_BASE_PATH if loaded(modules, name)] == []


def test_the_deferred_modules_are_imported_when_used(tmp_path: Path) -> None:
    """The check above can see them: -o junit imports the XML library, an instancetype of an older
    apiVersion the older models."""
    old = tmp_path / "old.yaml"
    old.write_text(
        (EXAMPLES / "vm-fedora.yaml").read_text()
        + "---\n"
        + (EXAMPLES / "instancetypes.yaml")
        .read_text()
        .replace("instancetype.kubevirt.io/v1beta1", "instancetype.kubevirt.io/v1alpha2")
        + "---\n"
        + (EXAMPLES / "preferences.yaml").read_text()
    )
    code, modules = imported_by("expand", "-f", str(old), "--check", "-o", "junit")
    assert code == 0
    assert "xml.etree.ElementTree" in modules
    assert "apiserver.render.instancetype.models.v1alpha" in modules
    assert "pydantic" in modules
