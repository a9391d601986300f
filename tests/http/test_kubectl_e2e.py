"""The real kubectl against the running server (``kubevirt-expand serve --manifests examples/``)."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apiserver import expand
from apiserver.documents.manifests import read_manifest_paths
from tests.support.http_helpers import EXAMPLES, GROUP, ServerProcess, put_path, start_process, vm_path

KUBECTL = shutil.which("kubectl") or ("/usr/bin/kubectl" if Path("/usr/bin/kubectl").exists() else None)
pytestmark = [
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine"),
    # One pytest-xdist worker runs them all, so the module's server is started once.
    pytest.mark.xdist_group("kubectl-e2e"),
]

OBJECTS = [obj for _, obj in read_manifest_paths([str(EXAMPLES)])]
KUBEVIRT = next(o for o in OBJECTS if o["kind"] == "KubeVirt")
VMS = {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == "VirtualMachine"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    tmp = tmp_path_factory.mktemp("kubectl")
    proc = start_process(tmp, "--manifests", str(EXAMPLES))
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "expand",
                        "cluster": {"server": proc.url, "certificate-authority": str(proc.ca_file)},
                    }
                ],
                "users": [{"name": "nobody", "user": {"token": "unused-without-authentication"}}],
                "contexts": [{"name": "expand", "context": {"cluster": "expand", "user": "nobody"}}],
                "current-context": "expand",
            }
        )
    )
    try:
        yield proc, kubeconfig
    finally:
        proc.stop()


def kubectl(kubeconfig: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "--request-timeout", "20s", *args],
        input=stdin if stdin is not None else b"",  # never a terminal: kubectl must not prompt
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_discovery_through_kubectl(server: tuple[ServerProcess, Path]) -> None:
    _, kubeconfig = server
    apis = kubectl(kubeconfig, "get", "--raw", "/apis")
    assert apis.returncode == 0, apis.stderr
    assert json.loads(apis.stdout)["groups"][0]["name"] == GROUP
    resources = kubectl(kubeconfig, "get", "--raw", f"/apis/{GROUP}/v1")
    assert resources.returncode == 0, resources.stderr
    names = {r["name"] for r in json.loads(resources.stdout)["resources"]}
    assert names == {"expand-vm-spec", "virtualmachines/expand-spec"}
    # kubectl's own discovery client (aggregated discovery) lists the group's resources.
    listed = kubectl(kubeconfig, "api-resources", f"--api-group={GROUP}", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert "expand-vm-spec." + GROUP in listed.stdout.decode()


def test_get_raw_expand_spec_equals_the_engine(server: tuple[ServerProcess, Path]) -> None:
    _, kubeconfig = server
    for name in sorted(VMS):
        result = kubectl(kubeconfig, "get", "--raw", vm_path(name=name))
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == expand(VMS[name], OBJECTS, KUBEVIRT).vm
    presets = kubectl(kubeconfig, "get", "--raw", vm_path(name="fedora-pinned") + "?presets=true")
    assert json.loads(presets.stdout) == expand(VMS["fedora-pinned"], OBJECTS, KUBEVIRT, presets=True).vm


def test_replace_raw_expand_vm_spec(server: tuple[ServerProcess, Path], tmp_path: Path) -> None:
    _, kubeconfig = server
    vm: dict[str, Any] = copy.deepcopy(VMS["fedora"])
    del vm["metadata"]["namespace"]
    vm_file = tmp_path / "vm.json"
    vm_file.write_text(json.dumps(vm))
    result = kubectl(kubeconfig, "replace", "--raw", put_path("default"), "-f", str(vm_file))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == expand(VMS["fedora"], OBJECTS, KUBEVIRT).vm
    validated = kubectl(
        kubeconfig,
        "replace",
        "--raw",
        put_path("default") + "?validate=true",
        "-f",
        "-",
        stdin=json.dumps(vm).encode(),
    )
    assert validated.returncode == 0, validated.stderr


def test_errors_reach_kubectl_as_status_messages(server: tuple[ServerProcess, Path], tmp_path: Path) -> None:
    _, kubeconfig = server
    missing = kubectl(kubeconfig, "get", "--raw", vm_path(name="ghost"))
    assert missing.returncode != 0
    assert 'virtualmachines.kubevirt.io "ghost" not found' in missing.stderr.decode()
    wrong_ns = tmp_path / "wrong.json"
    wrong_ns.write_text(json.dumps({**VMS["fedora"], "metadata": {"name": "fedora", "namespace": "other"}}))
    refused = kubectl(kubeconfig, "replace", "--raw", put_path("default"), "-f", str(wrong_ns))
    assert refused.returncode != 0
    assert "VM namespace must be empty or default" in refused.stderr.decode()


def test_replace_raw_with_the_yaml_example_file(server: tuple[ServerProcess, Path]) -> None:
    """kubectl --raw sends the file as it is, labelled JSON: the YAML is read all the same."""
    _, kubeconfig = server
    result = kubectl(
        kubeconfig, "replace", "--raw", put_path("default"), "-f", str(EXAMPLES / "vm-fedora.yaml")
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == expand(VMS["fedora"], OBJECTS, KUBEVIRT).vm
    # Two documents: one clear error naming them.
    pinned = kubectl(
        kubeconfig, "replace", "--raw", put_path("default"), "-f", str(EXAMPLES / "vm-fedora-pinned.yaml")
    )
    assert pinned.returncode != 0
    assert (
        "the request body holds 2 documents (document 1: VirtualMachine, document 2: ControllerRevision)"
        in pinned.stderr.decode()
    )


def test_field_validation_through_kubectl(server: tuple[ServerProcess, Path], tmp_path: Path) -> None:
    _, kubeconfig = server
    vm: dict[str, Any] = copy.deepcopy(VMS["fedora"])
    vm["spec"]["template"]["spec"]["domain"]["cpuu"] = {"cores": 2}
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps(vm))
    refused = kubectl(
        kubeconfig, "replace", "--raw", put_path("default") + "?fieldValidation=Strict", "-f", str(typo)
    )
    assert refused.returncode != 0
    assert refused.stderr.decode().strip() == (
        'The VirtualMachine "fedora" is invalid: spec.template.spec.domain.cpuu: '
        'unknown field "spec.template.spec.domain.cpuu"'
    )
    # --raw names no fieldValidation: Warn, kube-apiserver's default for a write that names none.
    for query in ("", "?fieldValidation=Warn"):
        warned = kubectl(kubeconfig, "replace", "--raw", put_path("default") + query, "-f", str(typo))
        assert warned.returncode == 0, warned.stderr
        # kubectl prints Warning headers on stderr.
        assert 'Warning: unknown field "spec.template.spec.domain.cpuu"' in warned.stderr.decode()
