"""The cluster source against the fake API server, where it needs what only the fake does on demand (slow
reads, the legacy flavor CRDs). Everything that can run on a real kube-apiserver too is in
tests/parity/test_cluster_parity.py, which runs on both."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from apiserver.render.objects import ObjectRef
from apiserver.sources.cluster import ClusterSource
from tests.support.fakekube import FLAVOR_RESOURCES, FakeKube
from tests.support.fakekube.testing import eventually, instancetype, kubeconfig, obj, preference

IT = "instancetype.kubevirt.io/v1beta1"
FAST = {"backoff": (0.02, 0.2), "read_timeout": 1.0, "revision_negative_ttl": 0.2}


def ref(kind: str, name: str, ns: str = "default") -> ObjectRef:
    return ObjectRef(kind, "" if "Cluster" in kind else ns, name)


@pytest.fixture
async def fake() -> AsyncIterator[FakeKube]:
    async with FakeKube(bookmark_interval=0.1) as f:
        yield f


async def started(fake: FakeKube, tmp_path: Path, **options: object) -> ClusterSource:
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kubeconfig"), **{**FAST, **options})  # type: ignore[arg-type]
    await source.start()
    async with asyncio.timeout(5):
        await source.wait_synced()
    watching = sum(1 for c in source.caches.values() if c.missing is False)
    await eventually(lambda: fake.open_watches == watching)
    return source


@pytest.fixture
async def source(fake: FakeKube, tmp_path: Path) -> AsyncIterator[ClusterSource]:
    fake.create(instancetype("it"))
    fake.create(instancetype("cit", cluster=True))
    fake.create(preference("pref"))
    fake.create(preference("cpref", cluster=True))
    s = await started(fake, tmp_path)
    fake.reset_log()
    yield s
    await s.close()


def revision(name: str, data: dict[str, object]) -> dict[str, object]:
    return obj("ControllerRevision", name, api="apps/v1", data=data, revision=1)


async def test_concurrent_reads_of_one_missing_object_share_one_request(
    fake: FakeKube, source: ClusterSource
) -> None:
    fake.create(instancetype("burst"))
    fake.delay(0.1, verbs=["get"])
    results = await asyncio.gather(
        *(source.get(ref("VirtualMachineInstancetype", "burst")) for _ in range(50))
    )
    assert all(r is not None and r["metadata"]["name"] == "burst" for r in results)
    assert fake.count("get") == 1
    fake.create(revision("r", {}))
    results = await asyncio.gather(*(source.get(ref("ControllerRevision", "r")) for _ in range(50)))
    assert all(results) and fake.count("get", resource="controllerrevisions") == 1


async def test_readiness_waits_for_the_caches(fake: FakeKube, tmp_path: Path) -> None:
    fake.delay(0.4, verbs=["list"])
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    assert not any(c.ok for c in source.checks())
    await source.start()
    try:
        # The instancetypes' list is under way (held 0.4 s by the fake): the cache cannot be synced yet.
        await eventually(lambda: fake.count("list", resource="virtualmachineinstancetypes"))
        checks = {c.name: c for c in source.checks()}
        assert not checks["cache-virtualmachineinstancetypes"].ok
        assert checks["cache-virtualmachineinstancetypes"].message == "not synced yet"
        async with asyncio.timeout(3):
            await source.wait_synced()
        assert all(c.ok for c in source.checks())
        assert checks.keys() >= {
            "cache-virtualmachineclusterinstancetypes",
            "cache-virtualmachinepreferences",
            "cache-virtualmachineclusterpreferences",
            "cache-virtualmachineinstancepresets",
            "cache-kubevirts",
        }
    finally:
        await source.close()


async def test_legacy_flavors_are_found_under_instancetype_refs(tmp_path: Path) -> None:
    async with FakeKube(resources=[*FakeKube().resources, *FLAVOR_RESOURCES], bookmark_interval=0.1) as fake:
        flavor = obj(
            "VirtualMachineFlavor", "old", api="flavor.kubevirt.io/v1alpha1", spec={"cpu": {"guest": 2}}
        )
        fake.create(flavor)
        source = await started(fake, tmp_path)
        try:
            found = await source.get(ref("VirtualMachineInstancetype", "old"))
            assert found is not None and found["kind"] == "VirtualMachineFlavor"
        finally:
            await source.close()


@pytest.mark.parametrize("name", [".", "..", "a/b", "Upper", "x" * 254, ""])
async def test_a_name_no_object_can_have_is_never_read(
    fake: FakeKube, source: ClusterSource, name: str
) -> None:
    """A name that would change what the URL means ('.' lists, '..' reads a discovery document) or that
    Kubernetes would refuse for any object is not found, without a request."""
    for kind in ("VirtualMachineInstancetype", "VirtualMachineClusterPreference", "ControllerRevision"):
        assert await source.get(ref(kind, name)) is None
    for kind in ("PersistentVolumeClaim", "DataVolume", "DataSource", "VolumeSnapshot"):
        assert await source.get(ref(kind, name)) is None
    assert await source.get_vm("default", name) is None
    assert await source.get(ObjectRef("ControllerRevision", "..", "r")) is None
    assert await source.presets("..") == []
    assert fake.count("get") == 0 and fake.count("list") == 0


def test_resource_paths_escape_and_refuse() -> None:
    from apiserver.sources.cluster.kinds import INSTANCETYPE, PVC, InvalidName

    assert (
        INSTANCETYPE.path("ns", "a.b")
        == "/apis/instancetype.kubevirt.io/v1beta1/namespaces/ns/virtualmachineinstancetypes/a.b"
    )
    assert PVC.path("ns") == "/api/v1/namespaces/ns/persistentvolumeclaims"
    assert PVC.path() == "/api/v1/persistentvolumeclaims"
    for namespace, name in (("ns", "."), ("ns", ".."), ("..", "x"), ("", "x"), ("ns", "a%2fb")):
        with pytest.raises(InvalidName):
            INSTANCETYPE.path(namespace, name)
