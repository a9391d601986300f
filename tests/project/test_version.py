"""``kubevirt-expand --version`` and the server's ``/version``: the package version and the KubeVirt code
the output matches, as the command line prints them and as kubectl reads them."""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from apiserver.version import package_commit, semantic_version
from tests.http.test_kubectl_e2e import KUBECTL, kubectl, server  # noqa: F401 - the module's server fixture
from tests.support.auth_fixtures import auth_env
from tests.support.http_helpers import MemorySource, running_server

PACKAGE_VERSION = version("kubevirt-expand-apiserver")
# /version holds it as a semantic version, which kubectl parses (PEP 440 0.1.dev5+gabc is v0.1.0-dev.5+gabc).
GIT_VERSION = semantic_version(PACKAGE_VERSION)
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


def test_the_semantic_version_of_a_python_version() -> None:
    assert [
        semantic_version(v)
        for v in ("1.2.3", "1.2.4.dev1+g35ccebbdd", "0.1.dev691+gb00fca277.d20261207", "2.0rc1", "0.1.dev0")
    ] == [
        "v1.2.3",
        "v1.2.4-dev.1+g35ccebbdd",
        "v0.1.0-dev.691+gb00fca277.d20261207",
        "v2.0.0-rc.1",
        "v0.1.0-dev.0",
    ]


def test_command_line_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "apiserver.cli", "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    commit, dirty = package_commit()  # of this install (tests/project/test_release.py builds tagged ones)
    built = (
        f"commit {commit[:12]}{', with uncommitted changes' if dirty else ''}" if commit else "commit unknown"
    )
    assert result.stdout.splitlines() == [
        f"kubevirt-expand {PACKAGE_VERSION} ({built})",
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
    assert (info["major"], info["minor"], info["gitVersion"]) == (major, minor, GIT_VERSION)
    commit, dirty = package_commit()
    assert info["gitCommit"] == commit and re.fullmatch(r"([0-9a-f]{40})?", commit)
    assert info["gitTreeState"] == (("dirty" if dirty else "clean") if commit else "")
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
        assert body["gitVersion"] == GIT_VERSION
        assert env.reviews.access_reviews == []


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")
def test_kubectl_version_reads_it(server: tuple[object, Path]) -> None:  # noqa: F811
    """kubectl reads Go's version.Info (it drops the extra ``kubevirt`` member)."""
    _, kubeconfig = server
    result = kubectl(kubeconfig, "version", "-o", "json")
    assert result.returncode == 0, result.stderr
    server_version = json.loads(result.stdout)["serverVersion"]
    assert server_version["gitVersion"] == GIT_VERSION
    assert (server_version["major"], server_version["platform"]) == (PACKAGE_VERSION.split(".")[0], PLATFORM)
    plain = kubectl(kubeconfig, "version")
    assert f"Server Version: {GIT_VERSION}" in plain.stdout.decode(), plain.stderr
