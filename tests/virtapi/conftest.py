"""Session fixtures: a control plane of its own (virt-api takes subresources.kubevirt.io, which the other
real-control-plane tests' server holds, and the KubeVirt CR's configuration changes here), ours deployed with
the own-group overlay and ``--kubevirt-error-codes`` (virt-api's codes; see test_errors.py), and KubeVirt's
virt-api run by ../shared/oracle/virt-api/run.sh. Skipped, with the reason, where virt-api is not built
(``KUBEVIRT_VIRT_API``, devcluster/virtapi.py) or the control plane cannot run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster import virtapi
from devcluster.controlplane import ControlPlane, tail, unavailable
from devcluster.deployed import DeployedServer
from devcluster.paths import CRDS_FILE, REPO
from tests.support.shared import needs_control_plane, needs_shared
from tests.virtapi.sides import TALLY, Kube, Sides

HERE = Path(__file__).parent
GROUP_MARK = "virtapi"
OWN_GROUP = REPO / "apiservice" / "overlays" / "own-group"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): run on the same pytest-xdist worker as the group")


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py gives the others their work units
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.xdist_group(GROUP_MARK))
            item.add_marker(needs_shared(CRDS_FILE))
            item.add_marker(needs_control_plane())


@pytest.fixture(scope="session")
def virt_api_binary() -> Path:
    reason = virtapi.unavailable()
    if reason:
        pytest.skip(reason)
    found = virtapi.find_virt_api()
    assert found is not None
    return found


@pytest.fixture(scope="session")
def plane(virt_api_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    reason = unavailable()
    if reason:
        pytest.skip(f"real control plane unavailable: {reason}")
    cluster = ControlPlane(tmp_path_factory.mktemp("virtapi-plane"))
    try:
        cluster.start()
        cluster.kubectl("apply", "-f", str(CRDS_FILE))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def virt_api(
    plane: ControlPlane, virt_api_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[virtapi.VirtApi]:
    server = virtapi.VirtApi(plane, tmp_path_factory.mktemp("virt-api"), virt_api_binary)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def ours(
    plane: ControlPlane, virt_api: virtapi.VirtApi, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DeployedServer]:
    """Ours as the own-group overlay deploys it (``--vm-cache`` included), with virt-api's error codes."""
    server = DeployedServer(
        plane, tmp_path_factory.mktemp("ours"), overlay=OWN_GROUP, extra_args=["--kubevirt-error-codes"]
    )
    server.install()
    server.start()
    try:
        server.register()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kube(plane: ControlPlane) -> Iterator[Kube]:
    client = Kube(plane)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def sides(ours: DeployedServer, virt_api: virtapi.VirtApi, kube: Kube) -> Sides:
    return Sides(kube)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome: Any = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        values = list(getattr(item, "funcargs", {}).values())
        for server in (v for v in values if isinstance(v, DeployedServer)):
            report.sections.append((f"server log {server.log_file} (last lines)", tail(server.log_file, 40)))
        for api in (v for v in values if isinstance(v, virtapi.VirtApi)):
            report.sections.append((f"virt-api log {api.log_file} (last lines)", api.log()))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TALLY:
        terminalreporter.section("golden cases against virt-api")
        for outcome, count in TALLY.most_common():
            terminalreporter.write_line(f"{count:5d}  {outcome}")
