"""``kubevirt-expand --version`` and the server's ``/version``: the package version and the KubeVirt code
the output matches, as the command line prints them and as kubectl reads them."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.http.test_kubectl_e2e import KUBECTL, kubectl, server  # noqa: F401 - the module's server fixture
from tests.support.auth_fixtures import auth_env
from tests.support.http_helpers import MemorySource, running_server

PACKAGE_VERSION = version("kubevirt-expand-apiserver")
KUBEVIRT_COMMIT = "d923fdb815cd2016ddaebdaaa51db04133576d72"  # ../shared/conformance/README.md
PLATFORM = f"{sys.platform}/" + {"x86_64": "amd64", "aarch64": "arm64"}.get(
    platform.machine(), platform.machine()
)
VERSION_INFO_KEYS = {
    "major",
    "minor",
    "gitVersion",
    "gitCommit",
    "gitTreeState",
    "buildDate",
    "goVersion",
    "compiler",
    "platform",
}


def test_command_line_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "apiserver.cli", "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"kubevirt-expand {PACKAGE_VERSION}",
        f"output matches KubeVirt main at {KUBEVIRT_COMMIT[:12]} (2026-08-22); "
        "legacy ControllerRevisions decoded as v1.6.6",
    ]


async def test_version_in_kubernetes_version_info_shape(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        reply = await srv.get("/version")
        slash = await srv.get("/version/")
        as_yaml = await srv.get("/version", headers={"Accept": "application/yaml"})
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"].startswith("application/json")
    info = reply.json()
    assert set(info) == VERSION_INFO_KEYS | {"kubevirt"}
    major, minor, *_ = PACKAGE_VERSION.split(".")
    assert (info["major"], info["minor"], info["gitVersion"]) == (major, minor, f"v{PACKAGE_VERSION}")
    assert info["kubevirt"] == {
        "gitVersion": "main",
        "gitCommit": KUBEVIRT_COMMIT,
        "commitDate": "2026-08-22",
        "legacyDecoding": "v1.6.6",
    }
    assert slash.json() == info
    assert as_yaml.status == 200 and as_yaml.body.startswith(b"major: '")


async def test_version_needs_an_identity_but_no_review(tmp_path: Path) -> None:
    """As kube-apiserver's RBAC has it (system:public-info-viewer), and as discovery here."""
    async with auth_env(tmp_path) as env:
        code, _, body = await env.call("/version")
        assert code == 401, body
        code, _, body = await env.call("/version", cert=env.pki.carol)
        assert code == 200, body
        assert body["gitVersion"] == f"v{PACKAGE_VERSION}"
        assert env.reviews.access_reviews == []


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")
def test_kubectl_version_reads_it(server: tuple[object, Path]) -> None:  # noqa: F811
    """kubectl reads Go's version.Info (it drops the extra ``kubevirt`` member)."""
    _, kubeconfig = server
    result = kubectl(kubeconfig, "version", "-o", "json")
    assert result.returncode == 0, result.stderr
    server_version = json.loads(result.stdout)["serverVersion"]
    assert server_version["gitVersion"] == f"v{PACKAGE_VERSION}"
    assert (server_version["major"], server_version["platform"]) == (PACKAGE_VERSION.split(".")[0], PLATFORM)
    plain = kubectl(kubeconfig, "version")
    assert f"Server Version: v{PACKAGE_VERSION}" in plain.stdout.decode(), plain.stderr
