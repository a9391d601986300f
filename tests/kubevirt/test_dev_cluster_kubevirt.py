"""The newcomer's loop of docs/kubectl.md ("With KubeVirt's own control plane"), run verbatim from a fresh copy of
the project: ``hack/dev-cluster.sh up`` with KubeVirt's binaries found where ``$KUBEVIRT_BIN`` points, the
examples' VMs started by virt-controller, their captured revisions in the collection, an instancetype edit
making the running VM stale, the upgrade previewed by name, taken as KubeVirt takes it, and KubeVirt agreeing
with the preview. And the same command with no binaries anywhere: one line says so and the rest runs as before.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster import kubevirt
from devcluster.paths import assets_dir
from tests.project.test_readme_recipes import recipes
from tests.project.test_suite import clean_env, project_copy
from tests.realk8s.test_dev_cluster import venv_of_this_run

TIMEOUT = 300


def _run(root: Path, env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    binaries = kubevirt.find_binaries()
    if binaries is None:
        pytest.skip(kubevirt.unavailable() or "no KubeVirt binaries")
    tmp = tmp_path_factory.mktemp("dev-cluster-kubevirt")
    root = project_copy(tmp)
    env = clean_env(
        KUBEBUILDER_ASSETS=str(assets_dir()),
        KUBEVIRT_BIN=str(binaries.folder),
        VENV=str(venv_of_this_run(tmp / "venv", root)),
        PYTHONUNBUFFERED="1",
    )
    try:
        yield root, env
    finally:
        if (root / ".dev-cluster").exists():
            _run(root, env, "hack/dev-cluster.sh down")


def test_the_newcomer_loop_runs_verbatim_and_kubevirt_agrees_with_the_preview(
    copy: tuple[Path, dict[str, str]],
) -> None:
    root, env = copy
    look, loop = recipes("devcluster-kubevirt")
    # one shell, as the reader types them: the second block uses the first's KUBECONFIG
    began = time.monotonic()
    both = _run(root, env, f"{look.code}\necho '== the loop'\n{loop.code}")
    seconds = time.monotonic() - began
    assert both.returncode == 0, both.stdout + both.stderr
    first, _, second = both.stdout.partition("== the loop\n")
    up = subprocess.CompletedProcess(both.args, 0, first, both.stderr)
    assert (
        f"starting KubeVirt's control plane (virt-api, virt-controller) from {env['KUBEVIRT_BIN']}"
        in up.stderr
    )
    # virt-controller started the examples' running VMs: a VMI and a virt-launcher pod each
    for name in ("fedora", "fedora-cluster", "fedora-pinned"):
        assert f"virtualmachineinstance.kubevirt.io/{name} " in up.stdout, up.stdout
        assert f"pod/virt-launcher-{name}-" in up.stdout, up.stdout
    # the collection names the revisions virt-controller captured (INSTANCETYPE-SOURCE, -o wide)
    assert re.search(r"\sfedora-cmedium-v1beta1-[0-9a-f-]+-1\s", up.stdout), up.stdout
    done = subprocess.CompletedProcess(both.args, 0, second, both.stderr)
    lines = done.stdout.splitlines()
    stale = [line.split()[0] for line in lines if line.startswith("fedora")]
    assert "fedora" in stale[:3], done.stdout  # listed by --field-selector status.stale=true
    assert "live" in lines, done.stdout  # the preview's verdict
    # after the upgrade: no RestartRequired message (the empty line), and fedora no longer stale
    verdict_at = lines.index("live")
    assert "" in lines[verdict_at:], done.stdout
    last = lines[-1].split()
    assert last[0] == "fedora" and "false" in last, done.stdout
    print(f"the loop took {seconds:.1f} s, up with KubeVirt included")


def test_without_binaries_up_says_so_in_one_line(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    empty = tmp_path / "no-kubevirt"
    empty.mkdir()
    env = clean_env(
        KUBEBUILDER_ASSETS=str(assets_dir()),
        KUBEVIRT_BIN=str(empty),
        VENV=str(venv_of_this_run(tmp_path / "venv", root)),
        PYTHONUNBUFFERED="1",
    )
    try:
        up = _run(root, env, "hack/dev-cluster.sh up --no-examples")
        assert up.returncode == 0, up.stderr
        said = [line for line in up.stderr.splitlines() if "KubeVirt's" in line or "without KubeVirt" in line]
        assert said == [f"== without KubeVirt: {kubevirt.unavailable(empty)}"], up.stderr
        status = _run(root, env, "hack/dev-cluster.sh status")
        assert status.returncode == 0 and "virt-api" not in status.stderr, status.stderr
        assert "server: running" in status.stderr, status.stderr
    finally:
        _run(root, env, "hack/dev-cluster.sh down")
