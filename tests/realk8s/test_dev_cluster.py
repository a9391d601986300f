"""``hack/dev-cluster.sh up|status|down`` from a fresh copy of the project with nothing beside it: the
binaries named by ``KUBEBUILDER_ASSETS`` alone (the KubeVirt CRDs then built in), the docs' recipes for it
(docs/kubectl.md, marked ``devcluster``) run as written, the server reached through kube-apiserver's
aggregator with kubectl, and ``hack/deploy.sh`` switching overlays on that real API server.

virtctl is not installed on the machines this runs on: ``virtctl expand --vm fedora`` calls the same path as
the recipe's ``kubectl get --raw`` (``/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/
fedora/expand-spec``). The tests run in order, on the one cluster the first recipe starts (one control plane
more than the session's, started once).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devcluster.controlplane import KUBECTL, assets_dir
from tests.project.test_readme_recipes import Recipe, recipes
from tests.project.test_suite import clean_env, project_copy

TIMEOUT = 300  # up starts etcd, kube-apiserver and the server on a loaded machine


@dataclass
class DevCluster:
    root: Path  # the project copy
    env: dict[str, str]
    up: subprocess.CompletedProcess[str]  # the docs' first recipe: up, then kubectl through the aggregator
    down: Recipe

    @property
    def folder(self) -> Path:
        return self.root / ".dev-cluster"

    @property
    def kubeconfig(self) -> str:
        return str(self.folder / "admin.kubeconfig")

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=self.root, env=self.env | env, capture_output=True, text=True, timeout=TIMEOUT
        )

    def recipe(self, recipe: Recipe) -> subprocess.CompletedProcess[str]:
        return self.run("bash", "-euo", "pipefail", "-c", recipe.code)

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        return self.run(KUBECTL, "--kubeconfig", self.kubeconfig, *args)

    def state(self) -> dict[str, Any]:
        return json.loads((self.folder / "state.json").read_text())  # type: ignore[no-any-return]


def venv_of_this_run(folder: Path, root: Path) -> Path:
    """A VENV for hack/venv.sh that runs this interpreter and counts as installed for ``root``'s
    pyproject.toml (installing the copy into the real .venv would re-point its editable install)."""
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    stamp = subprocess.run(
        ["sha256sum", "pyproject.toml"], cwd=root, capture_output=True, text=True, check=True
    )
    (folder / f".installed-{stamp.stdout[:16]}").touch()
    return folder


@pytest.fixture(scope="module")
def dev_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    up, down = recipes("devcluster")
    assert "hack/dev-cluster.sh up" in up.code and "hack/dev-cluster.sh down" in down.code
    tmp = tmp_path_factory.mktemp("dev-cluster")
    root = project_copy(tmp)
    env = clean_env(
        KUBEBUILDER_ASSETS=str(assets_dir()),
        # nothing beside the copy: no KubeVirt either (tests/kubevirt/test_dev_cluster_kubevirt.py runs it)
        KUBEVIRT_BIN=str(tmp / "no-kubevirt"),
        VENV=str(venv_of_this_run(tmp / "venv", root)),
        PYTHONUNBUFFERED="1",
    )
    cluster = DevCluster(root, env, subprocess.CompletedProcess([], 0), down)
    try:
        cluster.up = cluster.recipe(up)
        yield cluster
    finally:
        if cluster.folder.exists():
            cluster.run("bash", "hack/dev-cluster.sh", "down")


def expanded_vms(text: str) -> list[dict[str, Any]]:
    """The VirtualMachine JSON documents kubectl --raw printed (one after the other, maybe on one line)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := text.find('{"kind":"VirtualMachine"', at)) >= 0:
        vm, at = decoder.raw_decode(text, at)
        found.append(vm)
    return found


def test_the_docs_recipe_brings_it_up_and_kubectl_reaches_the_server_through_the_aggregator(
    dev_cluster: DevCluster,
) -> None:
    up = dev_cluster.up
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-3000:]
    # Nothing beside the copy: the CRDs are the built-in ones; up printed the kubeconfig's path.
    assert "installing the KubeVirt CRDs (built in)" in up.stderr
    assert up.stdout.startswith(dev_cluster.kubeconfig + "\n")
    assert "virtctl expand --vm fedora -n default" in up.stderr
    # kubectl get vm: the examples, through the built-in CRDs' short name.
    assert re.findall(r"^(fedora\S*) ", up.stdout, re.MULTILINE) == [
        "fedora",
        "fedora-cluster",
        "fedora-pinned",
    ]
    # expand-spec of the stored VM, then expand-vm-spec of the file: both rendered by the server.
    stored, sent = expanded_vms(up.stdout)
    for vm in (stored, sent):
        assert vm["metadata"]["name"] == "fedora"
        assert "instancetype" not in vm["spec"] and "preference" not in vm["spec"]  # applied, matchers gone
        assert vm["spec"]["template"]["spec"]["domain"]["memory"]["guest"] == "1Gi"  # examples' cmedium
    assert "uid" in stored["metadata"] and "uid" not in sent["metadata"]  # read from the cluster, or not
    assert "APIService v1.subresources.kubevirt.io: Available" in up.stderr  # hack/dev-cluster.sh status


def test_status_prints_the_kubeconfig_and_a_second_up_is_refused(dev_cluster: DevCluster) -> None:
    status = dev_cluster.run("bash", "hack/dev-cluster.sh", "status")
    assert status.returncode == 0, status.stderr
    assert "APIService v1alpha3.subresources.kubevirt.io: Available" in status.stderr
    assert status.stdout.strip() == dev_cluster.kubeconfig
    again = dev_cluster.run("bash", "hack/dev-cluster.sh", "up")
    assert again.returncode == 1
    assert "a dev cluster is already up in" in again.stderr and "hack/dev-cluster.sh down" in again.stderr


# kubectl as hack/deploy.sh calls it, except what only a kubelet can make true here: the rollout of the
# Deployment's pods and, behind them, the new APIService's availability.
NO_KUBELET = f"""#!/usr/bin/env bash
case " $* " in
  *" rollout status "*|" wait --for=condition=Available "*) echo "(no kubelet: $*)"; exit 0 ;;
esac
exec {KUBECTL} "$@"
"""


def test_deploy_switching_overlays_removes_the_old_apiservices(
    dev_cluster: DevCluster, tmp_path: Path
) -> None:
    """On the real API server: the dev cluster registered the kubevirt-group overlay's two APIServices."""
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(NO_KUBELET)
    kubectl.chmod(0o755)
    env = {"KUBECONFIG": dev_cluster.kubeconfig, "KUBECTL": str(kubectl)}
    switched = dev_cluster.run("bash", "hack/deploy.sh", "--timeout", "60", "own-group", **env)
    assert switched.returncode == 0, switched.stdout[-2000:] + switched.stderr[-2000:]
    for old in ("v1.subresources.kubevirt.io", "v1alpha3.subresources.kubevirt.io"):
        assert f"removing APIService {old}: it routes to this server" in switched.stdout
    names = dev_cluster.kubectl("get", "apiservices", "-o", "name").stdout.split()
    assert "apiservice.apiregistration.k8s.io/v1.expand.kubevirt-expand.io" in names
    assert not [n for n in names if "subresources.kubevirt.io" in n]
    # kube-apiserver's own (Local) APIServices, which route to no service, are left alone.
    assert "apiservice.apiregistration.k8s.io/v1.apps" in names


def test_the_docs_recipe_takes_it_down(dev_cluster: DevCluster) -> None:
    pids = dev_cluster.state()["processes"]
    assert sorted(pids) == ["etcd", "kube-apiserver", "server"]
    down = dev_cluster.recipe(dev_cluster.down)
    assert down.returncode == 0, down.stderr
    assert "== stopped server" in down.stderr
    assert not dev_cluster.folder.exists()
    for name, pid in pids.items():
        cmdline = Path(f"/proc/{pid}/cmdline")
        alive = cmdline.exists() and str(dev_cluster.folder) in cmdline.read_bytes().decode(errors="replace")
        assert not alive, f"{name} ({pid}) still runs"
    status = dev_cluster.run("bash", "hack/dev-cluster.sh", "status")
    assert status.returncode == 1 and "no dev cluster in" in status.stderr
