"""The cluster source against the fake API server: lookups, caching, freshness, coalescing, readiness."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from apiserver.render.objects import ObjectRef
from apiserver.sources.cluster import ClusterSource
from apiserver.sources.cluster.rbac import RULES
from tests.fakekube import FLAVOR_RESOURCES, FakeKube
from tests.fakekube.testing import eventually, instancetype, kubeconfig, obj, preference

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


async def test_every_kind_is_served_from_the_cache(fake: FakeKube, source: ClusterSource) -> None:
    got = {
        kind: await source.get(ref(kind, name))
        for kind, name in [
            ("VirtualMachineInstancetype", "it"),
            ("VirtualMachineClusterInstancetype", "cit"),
            ("VirtualMachinePreference", "pref"),
            ("VirtualMachineClusterPreference", "cpref"),
        ]
    }
    assert {k: v["metadata"]["name"] for k, v in got.items() if v} == {
        "VirtualMachineInstancetype": "it",
        "VirtualMachineClusterInstancetype": "cit",
        "VirtualMachinePreference": "pref",
        "VirtualMachineClusterPreference": "cpref",
    }
    assert all(v and v["kind"] == k for k, v in got.items())
    assert fake.log == []  # warm: no upstream call at all
    # Another namespace does not see a namespaced object.
    assert await source.get(ref("VirtualMachineInstancetype", "it", ns="other")) is None


async def test_missing_objects_are_read_and_not_found(fake: FakeKube, source: ClusterSource) -> None:
    assert await source.get(ref("VirtualMachineInstancetype", "nope")) is None
    assert [(r.verb, r.resource, r.name, r.status) for r in fake.log] == [
        ("get", "virtualmachineinstancetypes", "nope", 404)
    ]


async def test_object_created_right_before_a_read_is_seen(fake: FakeKube, source: ClusterSource) -> None:
    fake.create(instancetype("new", cpus=3))
    found = await source.get(ref("VirtualMachineInstancetype", "new"))
    assert found is not None and found["spec"]["cpu"]["guest"] == 3
    # The fresh result went into the cache: the next read needs no request.
    fake.reset_log()
    assert await source.get(ref("VirtualMachineInstancetype", "new")) == found
    assert fake.log == []


async def test_changed_object_is_seen_once_the_watch_delivers_it(
    fake: FakeKube, source: ClusterSource
) -> None:
    fake.update(instancetype("it", cpus=8))
    cache = source.caches["VirtualMachineInstancetype"]
    took = await eventually(lambda: cache.store[("default", "it")]["spec"]["cpu"]["guest"] == 8, 2)
    found = await source.get(ref("VirtualMachineInstancetype", "it"))
    assert found is not None and found["spec"]["cpu"]["guest"] == 8
    assert fake.count("get") == fake.count("list") == 0
    assert took < 0.5


async def test_deleted_object_is_not_served(fake: FakeKube, source: ClusterSource) -> None:
    fake.delete(IT, "VirtualMachineClusterPreference", "cpref")
    cache = source.caches["VirtualMachineClusterPreference"]
    await eventually(lambda: ("", "cpref") not in cache.store, 2)
    assert await source.get(ref("VirtualMachineClusterPreference", "cpref")) is None
    assert [(r.verb, r.status) for r in fake.requests("get")] == [("get", 404)]


async def test_direct_read_of_a_deleted_object_does_not_resurrect_it(
    fake: FakeKube, source: ClusterSource
) -> None:
    cache = source.caches["VirtualMachineInstancetype"]
    stale = fake.get_object(IT, "VirtualMachineInstancetype", "it", "default")
    assert stale is not None
    fake.delete(IT, "VirtualMachineInstancetype", "it", "default")
    await eventually(lambda: ("default", "it") not in cache.store, 2)
    cache.offer(stale)  # a read that raced with the delete comes back late
    assert ("default", "it") not in cache.store


async def test_revisions_are_read_once_and_kept(fake: FakeKube, source: ClusterSource) -> None:
    fake.create(revision("rev1", {"apiVersion": IT, "kind": "VirtualMachineInstancetype", "spec": {}}))
    r = ref("ControllerRevision", "rev1")
    first = await source.get(r)
    assert first is not None and first["kind"] == "ControllerRevision" and first["data"]["kind"]
    assert await source.get(r) is first
    assert fake.count("get", resource="controllerrevisions") == 1


async def test_missing_revision_is_not_remembered_for_long(fake: FakeKube, source: ClusterSource) -> None:
    r = ref("ControllerRevision", "later")
    assert await source.get(r) is None
    assert await source.get(r) is None  # within the negative TTL: no second request
    assert fake.count("get", resource="controllerrevisions") == 1
    fake.create(revision("later", {}))
    await asyncio.sleep(0.25)
    assert await source.get(r) is not None
    assert fake.count("get", resource="controllerrevisions") == 2


async def test_presets_and_kubevirt_cr(fake: FakeKube, tmp_path: Path) -> None:
    sel = {"selector": {"matchLabels": {"a": "b"}}}
    for name in ("zeta", "alpha"):
        fake.create(obj("VirtualMachineInstancePreset", name, api="kubevirt.io/v1", spec=sel))
    fake.create(obj("VirtualMachineInstancePreset", "elsewhere", ns="other", api="kubevirt.io/v1", spec=sel))
    kv = obj(
        "KubeVirt",
        "kubevirt",
        ns="kubevirt",
        api="kubevirt.io/v1",
        spec={"configuration": {"network": {"defaultNetworkInterface": "masquerade"}}},
        status={"phase": "Deployed", "defaultArchitecture": "arm64"},
    )
    fake.create(kv)
    source = await started(fake, tmp_path)
    try:
        fake.reset_log()
        assert [p["metadata"]["name"] for p in await source.presets("default")] == ["alpha", "zeta"]
        assert await source.presets("empty") == []
        cr = await source.kubevirt()
        assert cr is not None and cr["status"]["defaultArchitecture"] == "arm64"
        assert cr["spec"]["configuration"]["network"]["defaultNetworkInterface"] == "masquerade"
        assert fake.log == []
    finally:
        await source.close()


async def test_no_kubevirt_cr(source: ClusterSource) -> None:
    assert await source.kubevirt() is None


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


async def test_vms_are_read_fresh_by_default(fake: FakeKube, source: ClusterSource) -> None:
    fake.create(obj("VirtualMachine", "vm", api="kubevirt.io/v1", spec={"running": False}))
    for _ in range(3):
        vm = await source.get_vm("default", "vm")
        assert vm is not None and vm["kind"] == "VirtualMachine"
    assert fake.count("get", resource="virtualmachines") == 3
    assert await source.get_vm("default", "missing") is None


async def test_vm_cache_flag(fake: FakeKube, tmp_path: Path) -> None:
    fake.create(obj("VirtualMachine", "vm", api="kubevirt.io/v1", spec={"running": False}))
    source = await started(fake, tmp_path, vm_cache=True)
    try:
        fake.reset_log()
        assert (await source.get_vm("default", "vm")) is not None
        assert fake.log == []
        fake.create(obj("VirtualMachine", "fresh", api="kubevirt.io/v1", spec={}))
        assert (await source.get_vm("default", "fresh")) is not None
        assert fake.count("get", resource="virtualmachines") == 1
    finally:
        await source.close()


async def test_volume_kinds_for_inference_are_read_directly(fake: FakeKube, source: ClusterSource) -> None:
    labels = {"instancetype.kubevirt.io/default-instancetype": "u1.small"}
    fake.create(obj("PersistentVolumeClaim", "disk", api="v1", metadata={"labels": labels}, spec={}))
    pvc = await source.get(ref("PersistentVolumeClaim", "disk"))
    assert pvc is not None and pvc["metadata"]["labels"] == labels and pvc["kind"] == "PersistentVolumeClaim"
    for kind in ("DataVolume", "DataSource", "VolumeSnapshot"):
        assert await source.get(ref(kind, "nope")) is None
    assert [r.resource for r in fake.requests("get")] == [
        "persistentvolumeclaims",
        "datavolumes",
        "datasources",
        "volumesnapshots",
    ]


async def test_readiness_waits_for_the_caches(fake: FakeKube, tmp_path: Path) -> None:
    fake.delay(0.4, verbs=["list"])
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    assert not any(c.ok for c in source.checks())
    await source.start()
    try:
        await asyncio.sleep(0.1)
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


async def test_missing_crds_are_skipped_with_one_log_line(
    fake: FakeKube, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "apiserver.sources.cluster")
    source = await started(fake, tmp_path, recheck_missing=0.05)
    try:
        await asyncio.sleep(0.3)  # several rechecks
        lines = [r.getMessage() for r in caplog.records if "virtualmachineflavors" in r.getMessage()]
        assert lines == [
            "virtualmachineflavors is not served by this cluster (CRD not installed); not caching it"
        ]
        flavor = {c.name: c for c in source.checks()}["cache-virtualmachineflavors"]
        assert flavor.ok and flavor.message == "not installed in this cluster"
        assert fake.count("list", resource="virtualmachineflavors") == 0
        fake.reset_log()
        assert await source.get(ref("VirtualMachineInstancetype", "gone")) is None
        assert [r.resource for r in fake.requests("get")] == ["virtualmachineinstancetypes"]
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


async def test_rbac_rules_cover_every_request(fake: FakeKube, tmp_path: Path) -> None:
    fake.create(obj("VirtualMachine", "vm", api="kubevirt.io/v1", spec={}))
    source = await started(fake, tmp_path, vm_cache=True)
    try:
        for kind in (
            "ControllerRevision",
            "PersistentVolumeClaim",
            "DataVolume",
            "DataSource",
            "VolumeSnapshot",
        ):
            await source.get(ref(kind, "x"))
        await source.get(ref("VirtualMachineInstancetype", "x"))
    finally:
        await source.close()
    allowed = {(r.resource, v) for r in RULES for v in r.verbs}
    used = {(r.resource, r.verb) for r in fake.log if r.resource}
    assert used <= allowed
    assert {res for res, _ in used} == {r.resource for r in RULES} - {
        "virtualmachineflavors",
        "virtualmachineclusterflavors",
    }
