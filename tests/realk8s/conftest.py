"""Session fixtures: one real control plane and one deployed server for the whole session, a namespace
per test. Skipped, with the reason, where the binaries are missing (see controlplane.unavailable)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.controlplane import VALIDATING_ADMISSION_POLICY_ARGS
from tests.realk8s.controlplane import CRDS_FILE, ControlPlane, tail, unavailable
from tests.realk8s.deployed import DeployedServer
from tests.support.clusters import shared_control_plane
from tests.support.shared import needs_control_plane, needs_shared

HERE = Path(__file__).parent
GROUP_MARK = "realk8s"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): run on the same pytest-xdist worker as the group")


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py gives the others their work units
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # One control plane per worker is expensive: every test here shares the one worker's. Without
    # ../shared (the CRDs, and the binaries unless KUBEBUILDER_ASSETS names them) they skip for that reason.
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.xdist_group(GROUP_MARK))
            item.add_marker(needs_shared(CRDS_FILE))
            item.add_marker(needs_control_plane())


def _plane(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str) -> Iterator[ControlPlane]:
    reason = unavailable()
    if reason:
        pytest.skip(f"real control plane unavailable: {reason}")
    cluster = ControlPlane(tmp_path_factory.mktemp(name), extra_args=args)
    try:
        cluster.start()
        cluster.kubectl("apply", "-f", str(CRDS_FILE))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    # The same one the parity tests (tests/parity) use: one control plane per session.
    with shared_control_plane(tmp_path_factory) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def isolated_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of its own for the fault tests, which kill, freeze and restart its kube-apiserver
    without disturbing the tests that share ``control_plane``."""
    # On SIGTERM, end open watches within 2 s: with the default (0: not waited for), kube-apiserver
    # v1.28 stops listening but then never exits while a watch is open, and each stop would be a kill
    # after 20 s.
    yield from _plane(tmp_path_factory, "isolated", "--shutdown-watch-termination-grace-period=2s")


@pytest.fixture(scope="session")
def private_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of its own, with ValidatingAdmissionPolicy on, for the tests that install what
    the others must not meet: docs/cost.md's admission policy (it judges every VM of the cluster),
    application-aware-quota's CRDs (new API groups in discovery)."""
    yield from _plane(tmp_path_factory, "private", *VALIDATING_ADMISSION_POLICY_ARGS)


@pytest.fixture(scope="session")
def deployed(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DeployedServer]:
    """The server with the Deployment's arguments, registered with the aggregator and Available."""
    server = DeployedServer(control_plane, tmp_path_factory.mktemp("deployed"))
    server.install()
    server.start()
    try:
        server.register()
        yield server
    finally:
        server.stop()


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    return control_plane.new_namespace("t")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome: Any = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        values = list(getattr(item, "funcargs", {}).values())
        for server in (v for v in values if isinstance(v, DeployedServer)):
            report.sections.append((f"server log {server.log_file} (last lines)", tail(server.log_file, 60)))
        for cluster in (v for v in values if isinstance(v, ControlPlane)):
            report.sections.append(
                (f"kube-apiserver log {cluster.apiserver_log} (last lines)", tail(cluster.apiserver_log, 30))
            )
