"""Session fixtures: KubeVirt's own control plane (devcluster/kubevirt.py: virt-api's webhooks and
virt-controller) beside a kube-apiserver of its own, KubeVirt's virt-api also registered as
``v1.subresources.kubevirt.io`` (its expand-spec), and ours deployed with the own-group overlay beside it.

Where KubeVirt's binaries are absent the tests skip with one reason; with ../shared beside the clone they are
always there (``../shared/oracle/kubevirt/bin``), so under ``KUBEVIRT_EXPAND_REQUIRE_SHARED`` (CI) a missing
binary or a plane that does not start fails instead."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster import kubevirt
from devcluster.controlplane import ControlPlane, tail, unavailable
from devcluster.deployed import DeployedServer
from devcluster.paths import CRDS_FILE, REPO
from tests.support.shared import needs_control_plane, needs_shared
from tests.virtapi.sides import Kube

HERE = Path(__file__).parent
GROUP_MARK = "kubevirt"
OWN_GROUP = REPO / "apiservice" / "overlays" / "own-group"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): run on the same pytest-xdist worker as the group")


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py gives the others their work units
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The binaries ../shared carries, unless KUBEVIRT_BIN names others: absent with ../shared missing is a
    # skip, absent with ../shared there (or demanded) a failure.
    binary = None if os.environ.get(kubevirt.BIN_ENV) else kubevirt.PLACES[0] / "virt-controller"
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.xdist_group(GROUP_MARK))
            item.add_marker(needs_shared(CRDS_FILE))
            if binary is not None:
                item.add_marker(needs_shared(binary))
            item.add_marker(needs_control_plane())


@pytest.fixture(scope="session")
def kv_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    reason = unavailable()
    if reason:
        pytest.skip(f"real control plane unavailable: {reason}")
    cluster = ControlPlane(tmp_path_factory.mktemp("kubevirt-plane"))
    try:
        cluster.start()
        cluster.kubectl("apply", "-f", str(CRDS_FILE))
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def plane(
    kv_cluster: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[kubevirt.KubeVirtPlane]:
    reason = kubevirt.unavailable()
    if reason:
        pytest.skip(reason)
    running = kubevirt.KubeVirtPlane(kv_cluster, tmp_path_factory.mktemp("kubevirt"), apiservice=True)
    try:
        running.start()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def ours(
    kv_cluster: ControlPlane, plane: kubevirt.KubeVirtPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DeployedServer]:
    """Ours as the own-group overlay deploys it (``--vm-cache``: the collection), beside KubeVirt."""
    server = DeployedServer(kv_cluster, tmp_path_factory.mktemp("ours"), overlay=OWN_GROUP)
    server.install()
    server.start()
    try:
        server.register()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kube(kv_cluster: ControlPlane) -> Iterator[Kube]:
    client = Kube(kv_cluster)
    try:
        yield client
    finally:
        client.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome: Any = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        values = list(getattr(item, "funcargs", {}).values())
        for server in (v for v in values if isinstance(v, DeployedServer)):
            report.sections.append((f"server log {server.log_file} (last lines)", tail(server.log_file, 40)))
        for running in (v for v in values if isinstance(v, kubevirt.KubeVirtPlane)):
            report.sections.append(("KubeVirt's logs (last lines)", running.logs(15)))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.kubevirt.test_catalog_upgrade import TALLY as UPGRADE_TALLY
    from tests.kubevirt.test_fleet import TALLY

    if TALLY or UPGRADE_TALLY:
        terminalreporter.section("the live fleet against KubeVirt")
        for outcome, count in sorted((TALLY + UPGRADE_TALLY).items()):
            terminalreporter.write_line(f"{count:5d}  {outcome}")
