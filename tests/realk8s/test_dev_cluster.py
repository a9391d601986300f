"""``hack/dev-cluster.sh up|status|down`` from a fresh copy of the project with nothing beside it: the
binaries named by ``KUBEBUILDER_ASSETS`` alone (the KubeVirt CRDs then built in), the server reached through
kube-apiserver's aggregator with kubectl, and ``hack/deploy.sh`` switching overlays on that real API server.

virtctl is not installed on the machines this runs on: ``virtctl expand`` calls the same path as the
``kubectl get --raw`` below (``/apis/subresources.kubevirt.io/v1/namespaces/NS/virtualmachines/NAME/
expand-spec``). The tests run in order, on the one cluster ``up`` starts (one control plane more than the
session's, started once).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devcluster.controlplane import KUBECTL, assets_dir
from tests.test_suite import clean_env, project_copy

EXPAND_SPEC = "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/fedora/expand-spec"
TIMEOUT = 300  # up starts etcd, kube-apiserver and the server on a loaded machine


@dataclass
class DevCluster:
    root: Path  # the project copy
    env: dict[str, str]
    up: subprocess.CompletedProcess[str]

    @property
    def folder(self) -> Path:
        return self.root / ".dev-cluster"

    @property
    def kubeconfig(self) -> str:
        return self.up.stdout.strip().splitlines()[-1]

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=self.root, env=self.env | env, capture_output=True, text=True, timeout=TIMEOUT
        )

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
    tmp = tmp_path_factory.mktemp("dev-cluster")
    root = project_copy(tmp)
    env = clean_env(
        KUBEBUILDER_ASSETS=str(assets_dir()),
        VENV=str(venv_of_this_run(tmp / "venv", root)),
        PYTHONUNBUFFERED="1",
    )
    up = subprocess.run(
        ["bash", "hack/dev-cluster.sh", "up"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    cluster = DevCluster(root, env, up)
    try:
        yield cluster
    finally:
        if cluster.folder.exists():
            cluster.run("bash", "hack/dev-cluster.sh", "down")


def test_up_serves_the_examples_through_the_aggregator(dev_cluster: DevCluster) -> None:
    up = dev_cluster.up
    assert up.returncode == 0, up.stderr[-3000:]
    # Nothing beside the copy: the CRDs are the built-in ones; stdout is the kubeconfig's path alone.
    assert "installing the KubeVirt CRDs (built in)" in up.stderr
    assert dev_cluster.kubeconfig == str(dev_cluster.folder / "admin.kubeconfig")
    assert "kubectl get --raw " + EXPAND_SPEC in up.stderr
    assert "virtctl expand --vm fedora -n default" in up.stderr
    # kubectl, through kube-apiserver's aggregator, to the server reading the cluster.
    got = dev_cluster.kubectl("get", "--raw", EXPAND_SPEC)
    assert got.returncode == 0, got.stderr
    vm = json.loads(got.stdout)
    assert vm["kind"] == "VirtualMachine" and vm["metadata"]["name"] == "fedora"
    assert "instancetype" not in vm["spec"] and "preference" not in vm["spec"]  # applied, matchers gone
    assert vm["spec"]["template"]["spec"]["domain"]["memory"]["guest"] == "1Gi"  # examples' cmedium
    # The built-in CRDs answer to kubectl's short names, as KubeVirt's do.
    listed = dev_cluster.kubectl("get", "vm", "-n", "default", "-o", "name")
    assert sorted(listed.stdout.split()) == [
        "virtualmachine.kubevirt.io/fedora",
        "virtualmachine.kubevirt.io/fedora-cluster",
        "virtualmachine.kubevirt.io/fedora-pinned",
    ]


def test_status_reports_it_up_and_a_second_up_is_refused(dev_cluster: DevCluster) -> None:
    status = dev_cluster.run("bash", "hack/dev-cluster.sh", "status")
    assert status.returncode == 0, status.stderr
    assert "APIService v1.subresources.kubevirt.io: Available" in status.stderr
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


def test_down_stops_every_process_and_removes_its_folder(dev_cluster: DevCluster) -> None:
    pids = dev_cluster.state()["processes"]
    assert sorted(pids) == ["etcd", "kube-apiserver", "server"]
    down = dev_cluster.run("bash", "hack/dev-cluster.sh", "down")
    assert down.returncode == 0, down.stderr
    assert "== stopped server" in down.stderr
    assert not dev_cluster.folder.exists()
    for name, pid in pids.items():
        assert not Path(f"/proc/{pid}").exists() or str(dev_cluster.folder) not in Path(
            f"/proc/{pid}/cmdline"
        ).read_bytes().decode(errors="replace"), f"{name} ({pid}) still runs"
    status = dev_cluster.run("bash", "hack/dev-cluster.sh", "status")
    assert status.returncode == 1 and "no dev cluster in" in status.stderr
