"""The cluster source on the fake API server and on a real kube-apiserver: the same reads, the same
answers, the same requests (counted by the source's own client, which sees both alike).

What a real API server cannot be made to do on demand (slow or failing reads, dropped connections,
compaction) stays in tests/test_cluster_source*.py, on the fake only; the fake's answers are checked
against the real ones in test_fake_fidelity.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from apiserver.render.objects import ObjectRef
from apiserver.sources.base import SourceUnavailable
from apiserver.sources.cluster import ClusterSource
from apiserver.sources.cluster.rbac import RULES, rules_for
from tests.support.clusters import Cluster
from tests.support.fakekube import FLAVOR_RESOURCES
from tests.support.fakekube.testing import eventually, obj
from tests.support.patience import patience

IT = "instancetype.kubevirt.io/v1beta1"
# No progress probes (a quorum list of each quiet kind every ~5 s): they would count as reads in the
# middle of a test that counts them, once a loaded machine has made its start-up take as long.
FAST = {"backoff": (0.02, 0.2), "read_timeout": 5.0, "revision_negative_ttl": 0.3, "progress_every": 3600.0}


def instancetype(name: str, ns: str | None, cpus: int = 1) -> dict[str, Any]:
    kind = "VirtualMachineInstancetype" if ns else "VirtualMachineClusterInstancetype"
    return obj(kind, name, ns, spec={"cpu": {"guest": cpus}, "memory": {"guest": "1Gi"}})


def preference(name: str, ns: str | None) -> dict[str, Any]:
    kind = "VirtualMachinePreference" if ns else "VirtualMachineClusterPreference"
    return obj(kind, name, ns, spec={"cpu": {"preferredCPUTopology": "cores"}})


def revision(name: str, ns: str, data: dict[str, Any]) -> dict[str, Any]:
    return obj("ControllerRevision", name, ns, api="apps/v1", data=data, revision=1)


def vm(name: str, ns: str) -> dict[str, Any]:
    return obj("VirtualMachine", name, ns, api="kubevirt.io/v1", spec={"running": False})


async def started(cluster: Cluster, kubeconfig: str | None = None, **options: Any) -> ClusterSource:
    source = ClusterSource(kubeconfig=kubeconfig or cluster.kubeconfig, **{**FAST, **options})
    await source.start()
    try:
        async with asyncio.timeout(15):
            await source.wait_synced()
        # ...and every watch requested, so that nothing the start-up does is counted as a later read.
        watching = [c for c in source.caches.values() if c.missing is False]
        await eventually(lambda: requests(source, "watch") >= len(watching), 5)
    except BaseException:
        await source.close()
        raise
    return source


def requests(source: ClusterSource, verb: str | None = None) -> int:
    """Reads sent upstream (gets and lists, or one verb): the watches' own requests are not counted."""
    assert source.client is not None
    counts = source.client.counts.by_verb
    return counts.get("get", 0) + counts.get("list", 0) if verb is None else counts.get(verb, 0)


class Objects:
    """The four instancetype/preference objects of a test, in its namespace or named for it."""

    def __init__(self, cluster: Cluster) -> None:
        ns = cluster.namespace
        self.ns = ns
        self.cit = cluster.unique("cit")
        self.cpref = cluster.unique("cpref")
        self.refs = {
            "VirtualMachineInstancetype": ObjectRef("VirtualMachineInstancetype", ns, "it"),
            "VirtualMachineClusterInstancetype": ObjectRef("VirtualMachineClusterInstancetype", "", self.cit),
            "VirtualMachinePreference": ObjectRef("VirtualMachinePreference", ns, "pref"),
            "VirtualMachineClusterPreference": ObjectRef("VirtualMachineClusterPreference", "", self.cpref),
        }

    async def create(self, cluster: Cluster) -> None:
        for o in (
            instancetype("it", self.ns),
            instancetype(self.cit, None),
            preference("pref", self.ns),
            preference(self.cpref, None),
        ):
            await cluster.create(o)


@pytest.fixture
async def objects(cluster: Cluster) -> Objects:
    made = Objects(cluster)
    await made.create(cluster)
    return made


@pytest.fixture
async def source(cluster: Cluster, objects: Objects) -> AsyncIterator[ClusterSource]:
    s = await started(cluster)
    yield s
    await s.close()


def ref(cluster: Cluster, kind: str, name: str) -> ObjectRef:
    return ObjectRef(kind, cluster.namespace, name)


async def test_every_kind_is_served_from_the_cache(
    cluster: Cluster, objects: Objects, source: ClusterSource
) -> None:
    before = requests(source)
    got = {kind: await source.get(r) for kind, r in objects.refs.items()}
    assert {k: v["metadata"]["name"] for k, v in got.items() if v} == {
        k: r.name for k, r in objects.refs.items()
    }
    assert all(v and v["kind"] == k and v["apiVersion"] == IT for k, v in got.items())
    assert requests(source) == before  # warm: no upstream call at all
    # Another namespace does not see a namespaced object (and that miss is one read).
    assert await source.get(ObjectRef("VirtualMachineInstancetype", cluster.unique("other"), "it")) is None
    assert requests(source) == before + 1


async def test_missing_objects_are_read_and_not_found(cluster: Cluster, source: ClusterSource) -> None:
    before = requests(source, "get")
    assert await source.get(ref(cluster, "VirtualMachineInstancetype", "nope")) is None
    assert await source.get(ObjectRef("VirtualMachineClusterPreference", "", cluster.unique("nope"))) is None
    assert requests(source, "get") == before + 2


async def test_object_created_right_before_a_read_is_seen(cluster: Cluster, source: ClusterSource) -> None:
    await cluster.create(instancetype("new", cluster.namespace, cpus=3))
    found = await source.get(ref(cluster, "VirtualMachineInstancetype", "new"))
    assert found is not None and found["spec"]["cpu"]["guest"] == 3
    # Whether the watch or a direct read brought it, it is cached now: the next read needs no request.
    before = requests(source)
    assert await source.get(ref(cluster, "VirtualMachineInstancetype", "new")) == found
    assert requests(source) == before


async def test_objects_created_later_arrive_through_the_watch(
    cluster: Cluster, source: ClusterSource
) -> None:
    before = requests(source)
    await cluster.create(preference("later", cluster.namespace))
    cit = cluster.unique("later")
    await cluster.create(instancetype(cit, None, cpus=2))
    prefs = source.caches["VirtualMachinePreference"]
    cits = source.caches["VirtualMachineClusterInstancetype"]
    await eventually(lambda: (cluster.namespace, "later") in prefs.store and ("", cit) in cits.store, 5)
    assert requests(source) == before


async def test_changed_object_is_seen_once_the_watch_delivers_it(
    cluster: Cluster, source: ClusterSource
) -> None:
    before = requests(source)
    await cluster.replace(instancetype("it", cluster.namespace, cpus=8))
    cache = source.caches["VirtualMachineInstancetype"]
    await eventually(lambda: cache.store[(cluster.namespace, "it")]["spec"]["cpu"]["guest"] == 8, 5)
    found = await source.get(ref(cluster, "VirtualMachineInstancetype", "it"))
    assert found is not None and found["spec"]["cpu"]["guest"] == 8
    assert found["metadata"]["generation"] == 2
    assert requests(source) == before


async def test_deleted_object_is_not_served(
    cluster: Cluster, objects: Objects, source: ClusterSource
) -> None:
    await cluster.delete(IT, "VirtualMachineClusterPreference", objects.cpref)
    cache = source.caches["VirtualMachineClusterPreference"]
    await eventually(lambda: ("", objects.cpref) not in cache.store, 5)
    before = requests(source, "get")
    assert await source.get(objects.refs["VirtualMachineClusterPreference"]) is None
    assert requests(source, "get") == before + 1  # read again, and not found upstream either


async def test_direct_read_of_a_deleted_object_does_not_resurrect_it(
    cluster: Cluster, source: ClusterSource
) -> None:
    cache = source.caches["VirtualMachineInstancetype"]
    key = (cluster.namespace, "it")
    stale = dict(cache.store[key])
    await cluster.delete(IT, "VirtualMachineInstancetype", "it", cluster.namespace)
    await eventually(lambda: key not in cache.store, 5)
    cache.offer(stale)  # a read that raced with the delete comes back late
    assert key not in cache.store


async def test_revisions_are_read_once_and_kept(cluster: Cluster, source: ClusterSource) -> None:
    data = {"apiVersion": IT, "kind": "VirtualMachineInstancetype", "spec": {"cpu": {"guest": 2}}}
    await cluster.create(revision("rev1", cluster.namespace, data))
    r = ref(cluster, "ControllerRevision", "rev1")
    before = requests(source, "get")
    first = await source.get(r)
    assert first is not None and first["kind"] == "ControllerRevision" and first["apiVersion"] == "apps/v1"
    assert first["data"] == data and first["revision"] == 1
    assert await source.get(r) is first
    assert requests(source, "get") == before + 1


async def test_missing_revision_is_not_remembered_for_long(cluster: Cluster, source: ClusterSource) -> None:
    r = ref(cluster, "ControllerRevision", "later")
    before = requests(source, "get")
    assert await source.get(r) is None
    assert await source.get(r) is None  # within the negative TTL: no second request
    assert requests(source, "get") == before + 1
    await cluster.create(revision("later", cluster.namespace, {}))
    await asyncio.sleep(0.35)  # the negative answer's TTL (0.3 s) running out: the behaviour under test
    assert await source.get(r) is not None
    assert requests(source, "get") == before + 2


async def test_presets_and_the_kubevirt_cr(cluster: Cluster, objects: Objects) -> None:
    ns = cluster.namespace
    sel = {"selector": {"matchLabels": {"a": "b"}}}
    for name in ("zeta", "alpha"):
        await cluster.create(obj("VirtualMachineInstancePreset", name, ns, api="kubevirt.io/v1", spec=sel))
    other = cluster.unique("other")
    source = await started(cluster)
    try:
        assert [p["metadata"]["name"] for p in await source.presets(ns)] == ["alpha", "zeta"]
        assert await source.presets(other) == []
        assert await source.kubevirt() is None
        kv = obj(
            "KubeVirt",
            "kubevirt",
            ns,
            api="kubevirt.io/v1",
            spec={"configuration": {"network": {"defaultNetworkInterface": "masquerade"}}},
            status={"phase": "Deployed", "defaultArchitecture": "arm64"},
        )
        # virt-operator has not seen it: no phase, so virt-api keeps its built-in configuration
        pending = obj("KubeVirt", "a-pending", ns, api="kubevirt.io/v1", spec=kv["spec"])
        await cluster.create(pending)
        try:
            await eventually(lambda: len(source.caches["KubeVirt"].store) == 1, 5)
            assert await source.kubevirt() is None
            await cluster.create(kv)
            await eventually(lambda: source.caches["KubeVirt"].deployed() is not None, 5)
            before = requests(source)
            cr = await source.kubevirt()
            assert cr is not None and cr["metadata"]["name"] == "kubevirt"
            assert cr["status"]["defaultArchitecture"] == "arm64"
            assert cr["spec"]["configuration"]["network"]["defaultNetworkInterface"] == "masquerade"
            assert requests(source) == before
        finally:  # the real cluster's other tests must not see a KubeVirt CR
            for name in ("kubevirt", "a-pending"):
                await cluster.delete("kubevirt.io/v1", "KubeVirt", name, ns)
        await eventually(lambda: not source.caches["KubeVirt"].store, 5)
    finally:
        await source.close()


async def test_vms_are_read_fresh_by_default(cluster: Cluster, source: ClusterSource) -> None:
    await cluster.create(vm("vm", cluster.namespace))
    before = requests(source, "get")
    for _ in range(3):
        found = await source.get_vm(cluster.namespace, "vm")
        assert found is not None and found["kind"] == "VirtualMachine" and found["spec"] == {"running": False}
    assert await source.get_vm(cluster.namespace, "missing") is None
    assert requests(source, "get") == before + 4


async def test_vm_cache_flag(cluster: Cluster, objects: Objects) -> None:
    await cluster.create(vm("vm", cluster.namespace))
    source = await started(cluster, vm_cache=True)
    try:
        # The collection's store renders every VM of the cluster once synced, reading the revisions of
        # those pinned to one (other tests' VMs on the shared real cluster): counted from after that.
        assert source.rendered is not None
        await asyncio.wait_for(source.rendered.ready.wait(), patience(30))
        # GETs only: a cache's relist (a watch expired on a cluster busy with other tests) is a list
        before = requests(source, "get")
        assert (await source.get_vm(cluster.namespace, "vm")) is not None
        assert requests(source, "get") == before
        await cluster.create(vm("fresh", cluster.namespace))
        assert (await source.get_vm(cluster.namespace, "fresh")) is not None
        assert requests(source, "get") - before <= 1  # read directly, unless the watch was quicker
    finally:
        await source.close()


async def test_volume_kinds_for_inference_are_read_directly(cluster: Cluster, source: ClusterSource) -> None:
    labels = {"instancetype.kubevirt.io/default-instancetype": "u1.small"}
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    await cluster.create(
        obj(
            "PersistentVolumeClaim",
            "disk",
            cluster.namespace,
            api="v1",
            metadata={"labels": labels},
            spec=spec,
        )
    )
    before = requests(source, "get")
    pvc = await source.get(ref(cluster, "PersistentVolumeClaim", "disk"))
    assert pvc is not None and pvc["metadata"]["labels"] == labels
    assert pvc["kind"] == "PersistentVolumeClaim" and pvc["apiVersion"] == "v1"
    # CDI and volume snapshots are not installed on either cluster: absent, not an error.
    for kind in ("DataVolume", "DataSource", "VolumeSnapshot"):
        assert await source.get(ref(cluster, kind, "disk")) is None
    assert requests(source, "get") == before + 4


async def test_readiness_and_the_kinds_not_installed(
    cluster: Cluster, objects: Objects, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "apiserver.sources.cluster")
    source = await started(cluster, recheck_missing=0.05)
    try:
        # Several rechecks: three more discovery reads for each of the two kinds not installed.
        discovered = requests(source, "discovery")
        await eventually(lambda: requests(source, "discovery") >= discovered + 2 * 3)
        checks = {c.name: c for c in source.checks()}
        assert all(c.ok for c in checks.values()), checks
        assert checks.keys() == {
            "cache-virtualmachineinstancetypes",
            "cache-virtualmachineclusterinstancetypes",
            "cache-virtualmachinepreferences",
            "cache-virtualmachineclusterpreferences",
            "cache-virtualmachineinstancepresets",
            "cache-kubevirts",
            "cache-virtualmachineflavors",
            "cache-virtualmachineclusterflavors",
        }
        for name in ("virtualmachineflavors", "virtualmachineclusterflavors"):
            assert checks[f"cache-{name}"].message == "not installed in this cluster"
            lines = [r.getMessage() for r in caplog.records if f"{name} " in r.getMessage()]
            assert lines == [f"{name} is not served by this cluster (CRD not installed); not caching it"]
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        assert source.caches["VirtualMachineFlavor"].lists == 0
        # An instancetype miss is one read, no flavor read.
        before = requests(source, "get")
        assert await source.get(ref(cluster, "VirtualMachineInstancetype", "gone")) is None
        assert requests(source, "get") == before + 1
    finally:
        await source.close()


async def test_watches_that_end_are_resumed_without_listing(cluster: Cluster, objects: Objects) -> None:
    """The API server ends each watch after its ``timeoutSeconds`` (here 1 s); the source resumes from
    the version it reached, lists nothing again, and misses no change."""
    source = await started(cluster, watch_seconds=(1, 1))
    try:
        cache = source.caches["VirtualMachineInstancetype"]
        await eventually(lambda: cache.watches >= 3, 10)
        await cluster.replace(instancetype("it", cluster.namespace, cpus=5))
        await eventually(lambda: cache.store[(cluster.namespace, "it")]["spec"]["cpu"]["guest"] == 5, 5)
        assert all(c.lists == 1 for c in source.caches.values() if c.missing is False)
        assert [c.last_error for c in source.caches.values()] == [""] * len(source.caches)
    finally:
        await source.close()


def rule_set(
    drop: Callable[[str], bool] = lambda _r: False, rules: tuple[Any, ...] = RULES
) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(r.api_group, r.resource, r.verbs) for r in rules if not drop(r.resource)]


@pytest.mark.parametrize("vm_cache", [False, True], ids=["default", "vm-cache"])
async def test_the_deployments_rbac_rules_allow_every_read(
    cluster: Cluster, objects: Objects, vm_cache: bool
) -> None:
    """A user granted exactly :func:`rules_for` the flags (the ClusterRoles the manifests deploy with
    them) reads everything."""
    rules = rule_set(rules=rules_for(vm_cache=vm_cache))
    kubeconfig = await cluster.kubeconfig_for(f"expand-reader-{int(vm_cache)}", rules)
    await cluster.create(vm("vm", cluster.namespace))
    await cluster.create(revision("rev", cluster.namespace, {}))
    source = await started(cluster, kubeconfig, vm_cache=vm_cache)
    try:
        if vm_cache:  # the collection's renderings read with the same rules
            assert source.rendered is not None
            await asyncio.wait_for(source.rendered.ready.wait(), 30)
        else:
            assert source.rendered is None
        assert all(c.ok and "error" not in c.message for c in source.checks()), source.checks()
        assert await source.get_vm(cluster.namespace, "vm") is not None
        for kind, name in objects.refs.items():
            assert await source.get(objects.refs[kind]) is not None, name
        assert await source.get(ref(cluster, "ControllerRevision", "rev")) is not None
        for kind in ("PersistentVolumeClaim", "DataVolume", "DataSource", "VolumeSnapshot"):
            assert await source.get(ref(cluster, kind, "x")) is None
    finally:
        await source.close()


async def test_reads_rbac_does_not_allow_are_the_servers_problem(cluster: Cluster, objects: Objects) -> None:
    """Without ``get`` on VirtualMachines, ControllerRevisions and PVCs, reading them is refused 403:
    SourceUnavailable (a 503 for the user, never "not found"); the caches it may read still work."""
    refused = {"virtualmachines", "controllerrevisions", "persistentvolumeclaims"}
    kubeconfig = await cluster.kubeconfig_for("half-reader", rule_set(lambda r: r in refused))
    source = await started(cluster, kubeconfig)
    try:
        with pytest.raises(
            SourceUnavailable, match=r"refused to read virtualmachines: .* forbidden.*\(403\)"
        ):
            await source.get_vm(cluster.namespace, "vm")
        with pytest.raises(SourceUnavailable, match=r"refused to read controllerrevisions"):
            await source.get(ref(cluster, "ControllerRevision", "rev"))
        with pytest.raises(SourceUnavailable, match=r"refused to read persistentvolumeclaims"):
            await source.get(ref(cluster, "PersistentVolumeClaim", "disk"))
        assert await source.get(objects.refs["VirtualMachineInstancetype"]) is not None
    finally:
        await source.close()


async def test_a_cache_rbac_does_not_allow_is_not_ready_and_says_why(
    cluster: Cluster, objects: Objects
) -> None:
    kubeconfig = await cluster.kubeconfig_for(
        "no-presets", rule_set(lambda r: r == "virtualmachineinstancepresets")
    )
    source = ClusterSource(kubeconfig=kubeconfig, **FAST)  # type: ignore[arg-type]
    await source.start()
    try:
        cache = source.caches["VirtualMachineInstancePreset"]
        await eventually(lambda: "forbidden" in cache.last_error, 10)
        await eventually(lambda: source.caches["VirtualMachineInstancetype"].synced.is_set(), 10)
        checks = {c.name: c for c in source.checks()}
        preset = checks["cache-virtualmachineinstancepresets"]
        assert not preset.ok and "cannot list resource" in preset.message
        assert checks["cache-virtualmachineinstancetypes"].ok
    finally:
        await source.close()


async def test_a_crd_installed_and_removed_while_running(
    cluster: Cluster, objects: Objects, caplog: pytest.LogCaptureFixture
) -> None:
    """KubeVirt's legacy flavor CRD installed after the server started is found, its objects served under
    instancetype references; removed again (its watch just ends, its paths answer a plain-text 404), the
    cache forgets it: INFO lines each time, no warning."""
    caplog.set_level(logging.INFO, "apiserver.sources.cluster")
    flavors = FLAVOR_RESOURCES[0]
    source = await started(cluster, recheck_missing=0.1)
    cache = source.caches["VirtualMachineFlavor"]
    flavor_ref = ref(cluster, "VirtualMachineInstancetype", "old")
    try:
        assert cache.missing is True
        await cluster.install(flavors)
        flavor = obj("VirtualMachineFlavor", "old", cluster.namespace, api=flavors.group_version, spec={})
        await cluster.create(flavor)
        await eventually(lambda: (cluster.namespace, "old") in cache.store, 10)
        found = await source.get(flavor_ref)
        assert found is not None and found["kind"] == "VirtualMachineFlavor"
        await cluster.uninstall(flavors)
        await eventually(lambda: cache.missing is True, 10)
        assert cache.store == {} and await source.get(flavor_ref) is None
        lines = [
            (r.levelname, r.getMessage()) for r in caplog.records if "virtualmachineflavors" in r.getMessage()
        ]
        assert [line for line in lines if line[0] != "INFO" or "\n" in line[1]] == []
        messages = [m for _, m in lines]
        assert (
            messages[0]
            == "virtualmachineflavors is not served by this cluster (CRD not installed); not caching it"
        )
        assert "virtualmachineflavors is served now; caching it" in messages
        assert (
            messages[-1]
            == "virtualmachineflavors is not served by this cluster (CRD not installed); not caching it"
        )
    finally:
        await source.close()


async def test_silent_watches_are_resumed_quietly(
    cluster: Cluster, objects: Objects, caplog: pytest.LogCaptureFixture
) -> None:
    """kube-apiserver sends nothing at all on a watch of a kind that does not change, not even a bookmark
    (test_fake_fidelity.py): a silence of the idle bound (here 1 s, 2 minutes in use) ends the watch
    quietly, and it is resumed at once from where it stood, without listing again."""
    idle = 1.0
    caplog.set_level(logging.DEBUG, logger="apiserver.sources.cluster")
    source = await started(cluster, watch_idle_timeout=idle, backoff=(0.5, 1.0))
    try:
        watching = [c for c in source.caches.values() if c.synced.is_set()]
        assert len(watching) == 6
        # Each watch ended by the idle bound twice and resumed (a third watch request).
        await eventually(lambda: all(c.watches >= 3 for c in watching), 3.5 * idle + 5)
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        assert all(check.ok and "error" not in check.message for check in source.checks()), source.checks()
        assert all(c.lists == 1 and c.watches >= 3 for c in watching), [
            (c.name, c.lists, c.watches) for c in watching
        ]
        name = cluster.unique("quiet")
        await cluster.create(instancetype(name, None))
        cache = source.caches["VirtualMachineClusterInstancetype"]
        await eventually(lambda: ("", name) in cache.store, 5)
        assert cache.lists == 1
    finally:
        await source.close()
