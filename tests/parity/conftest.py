"""The ``cluster`` fixture: every test here runs on the fake API server and on a real kube-apiserver.

The real runs share the session's one control plane with tests/realk8s (and its pytest-xdist worker:
they carry the same ``xdist_group``); each test gets a namespace of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.realk8s.controlplane import CRDS_FILE, ControlPlane
from tests.support.clusters import RESOURCES, Cluster, FakeCluster, RealCluster, shared_control_plane
from tests.support.fakekube import FakeKube
from tests.support.shared import needs_control_plane, needs_shared

REAL_GROUP = "realk8s"  # tests/realk8s/conftest.py's group: one worker holds the control plane


HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): run on the same pytest-xdist worker as the group")


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py gives the others their work units
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every test here that uses the real control plane runs on the worker that holds it.
    for item in items:
        if Path(str(item.fspath)).parent != HERE:
            continue
        callspec = getattr(item, "callspec", None)
        param = callspec.params.get("cluster_plane") if callspec is not None else None
        if param == "real" or "real_control_plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(REAL_GROUP))
            # Without ../shared (the CRDs) or the binaries: one skip reason for all, not one line each.
            item.add_marker(needs_shared(CRDS_FILE))
            item.add_marker(needs_control_plane())


@pytest.fixture(scope="session")
def real_control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with shared_control_plane(tmp_path_factory) as plane:
        yield plane


@pytest.fixture(params=["fake", "real"])
def cluster_plane(request: pytest.FixtureRequest) -> ControlPlane | None:
    """None for the fake; the real control plane (started on first use) for "real"."""
    if request.param == "fake":
        return None
    plane: ControlPlane = request.getfixturevalue("real_control_plane")
    return plane


@pytest.fixture
async def cluster(cluster_plane: ControlPlane | None, tmp_path: Path) -> AsyncIterator[Cluster]:
    if cluster_plane is None:
        fake = FakeKube(RESOURCES)
        await fake.start()
        made: Cluster = FakeCluster(tmp_path, fake)
    else:
        real = RealCluster(tmp_path, cluster_plane)
        await real.start()
        made = real
    try:
        yield made
    finally:
        await made.close()
