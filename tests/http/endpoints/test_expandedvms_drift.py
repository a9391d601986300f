"""The collection shows drift (issue 26), over the fake API server: VMs pinned to revisions of their
instancetype (status refs, as KubeVirt's controller writes them) are marked Stale when the instancetype
is edited, in their summary, a Stale condition and the Table's Stale and Upgrade columns; field
selectors list only the stale VMs, or the VMs of one instancetype by name and kind, on list and watch
(a VM entering ``status.stale=true`` is ADDED to that watch, leaving it DELETED).
The same behind kube-apiserver's aggregator, with kubectl: tests/realk8s/test_collection_drift.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from apiserver.sources.cluster import ClusterSource
from tests.support.fakekube import FakeKube
from tests.support.fakekube.testing import eventually, instancetype, kubeconfig, obj, stored_vm, synced
from tests.support.http_helpers import RunningServer, running_server
from tests.support.patience import patience
from tests.support.revisions import captured, status_ref
from tests.support.waiting import eventually_value

FAST = {"backoff": (0.02, 0.2), "read_timeout": 2.0}
BASE = "/apis/expand.kubevirt-expand.io/v1"
ITEMS = f"{BASE}/expandedvirtualmachines"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
NS = "default"


def vm(name: str, it: str | None, revision: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"runStrategy": "Always", "template": {"spec": {"domain": {"devices": {}}}}}
    status: dict[str, Any] = {}
    if it is not None:
        spec["instancetype"] = {"name": it, "kind": "VirtualMachineInstancetype"}
        if revision is not None:
            status["instancetypeRef"] = status_ref(spec["instancetype"], revision)
    return obj("VirtualMachine", name, NS, api="kubevirt.io/v1", spec=spec, status=status)


@pytest.fixture
async def fake() -> AsyncIterator[FakeKube]:
    async with FakeKube(bookmark_interval=0.1) as f:
        yield f


@pytest.fixture
async def server(fake: FakeKube, tmp_path: Path) -> AsyncIterator[tuple[RunningServer, ClusterSource]]:
    """a-0, a-1 pinned to revisions of ``small``; b-0 to one of ``large``; fresh on ``small`` with no
    revision yet; plain with no instancetype."""
    small = fake.create(instancetype("small", NS, cpus=2))
    large = fake.create(instancetype("large", NS, cpus=8))
    for name, it_obj in (("a-0", small), ("a-1", small), ("b-0", large)):
        revision = captured(name, NS, it_obj)
        fake.create(revision)
        stored_vm(fake, vm(name, it_obj["metadata"]["name"], revision))
    fake.create(vm("fresh", "small"))
    fake.create(vm("plain", None))
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), vm_cache=True, **FAST)  # type: ignore[arg-type]
    async with running_server(source, tmp_path) as srv:
        await synced(source, fake)
        assert source.rendered is not None
        await asyncio.wait_for(source.rendered.ready.wait(), patience(5))
        yield srv, source


async def names(srv: RunningServer, selector: str) -> list[str]:
    reply = await srv.get(f"{ITEMS}?fieldSelector={selector}")
    assert reply.status == 200, reply.body
    return [i["metadata"]["name"] for i in reply.json()["items"]]


async def _watch(srv: RunningServer, query: str, events: list[dict[str, Any]]) -> None:
    async with srv.session.get(srv.url + f"{ITEMS}?watch=true&{query}") as resp:
        assert resp.status == 200
        async for line in resp.content:
            if line.strip():
                events.append(json.loads(line))


async def test_current_revisions_are_not_stale(server: tuple[RunningServer, ClusterSource]) -> None:
    srv, _ = server
    items = {i["metadata"]["name"]: i for i in (await srv.get(ITEMS)).json()["items"]}
    pinned = items["a-0"]
    assert pinned["summary"]["instancetype"]["source"] == "ControllerRevision"
    assert pinned["summary"]["instancetype"]["stale"] is False and pinned["summary"]["stale"] is False
    assert "upgrade" not in pinned["summary"]
    stale = {c["type"]: c for c in pinned["status"]["conditions"]}["Stale"]
    assert (stale["status"], stale["reason"]) == ("False", "RevisionCurrent")
    assert "VirtualMachineInstancetype default/small" in stale["message"]
    fresh = {c["type"]: c for c in items["fresh"]["status"]["conditions"]}["Stale"]
    assert (fresh["status"], fresh["reason"]) == ("False", "NoRevision")
    assert "Stale" not in {c["type"] for c in items["plain"]["status"]["conditions"]}
    assert "stale" not in items["plain"]["summary"]
    assert await names(srv, "status.stale%3Dtrue") == []
    assert await names(srv, "status.stale%3Dfalse") == ["a-0", "a-1", "b-0", "fresh", "plain"]


async def test_selectors_by_instancetype_name_and_kind(server: tuple[RunningServer, ClusterSource]) -> None:
    srv, _ = server
    assert await names(srv, "spec.instancetype.name%3Dsmall") == ["a-0", "a-1", "fresh"]
    assert await names(srv, "spec.instancetype.name%3Dlarge") == ["b-0"]
    # the same field by the path the item shows it at
    assert await names(srv, "summary.instancetype.name%3Dlarge,summary.stale%3Dfalse") == ["b-0"]
    # a kind in any spelling a matcher takes
    for kind in ("VirtualMachineInstancetype", "virtualmachineinstancetypes", "virtualmachineinstancetype"):
        assert await names(srv, f"spec.instancetype.kind%3D{kind},spec.instancetype.name%3Dsmall") == [
            "a-0",
            "a-1",
            "fresh",
        ]
    assert await names(srv, "spec.instancetype.kind%3DVirtualMachineClusterInstancetype") == []
    assert await names(srv, "spec.instancetype.name%3D") == ["plain"]  # no matcher: the empty value
    assert await names(srv, "spec.instancetype.name!%3Dsmall") == ["b-0", "plain"]
    assert await names(srv, "spec.preference.name%3D") == ["a-0", "a-1", "b-0", "fresh", "plain"]
    bad = await srv.get(f"{ITEMS}?fieldSelector=spec.instancetype.revision%3Dx")
    assert bad.status == 400
    doc = bad.json()
    assert doc["kind"] == "Status" and doc["reason"] == "BadRequest"
    for field in ("status.stale", "spec.instancetype.name", "spec.preference.kind", "metadata.name"):
        assert f'"{field}"' in doc["message"]
    bad = await srv.get(f"{ITEMS}?fieldSelector=status.stale%3Dyes")
    assert bad.status == 400 and "true or false" in bad.json()["message"]
    watch = await srv.get(f"{ITEMS}?watch=1&fieldSelector=status.stale%3Dmaybe")
    assert watch.status == 400


async def test_edit_marks_exactly_its_pinned_vms_stale_live_on_list_and_watch(
    fake: FakeKube, server: tuple[RunningServer, ClusterSource]
) -> None:
    srv, source = server
    listed = (await srv.get(ITEMS)).json()
    rv = listed["metadata"]["resourceVersion"]
    everything: list[dict[str, Any]] = []
    stale_only: list[dict[str, Any]] = []
    tasks = [
        asyncio.create_task(_watch(srv, f"resourceVersion={rv}", everything)),
        asyncio.create_task(
            _watch(srv, f"resourceVersion={rv}&fieldSelector=status.stale%3Dtrue", stale_only)
        ),
    ]
    await eventually_value(lambda: srv.metric("kubevirt_expand_watches_held"), lambda held: held == 2)
    try:
        fake.update(instancetype("small", NS, cpus=4))
        await eventually(lambda: len(stale_only) >= 2)
        # Entering the selector: ADDED, each now stale, with the upgrade's verdict (4 vCPUs: within
        # maxSockets, so live).
        assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in stale_only) == [
            ("ADDED", "a-0"),
            ("ADDED", "a-1"),
        ]
        for event in stale_only:
            summary = event["object"]["summary"]
            assert summary["stale"] is True and summary["instancetype"]["stale"] is True
            upgrade = summary["upgrade"]
            assert (upgrade["verdict"], upgrade["message"]) == ("live", "")
            # what the upgrade costs: the pod's requests now and once upgraded (two vCPUs more, a tenth
            # of a CPU each; the pod's other containers request 5m)
            requests = upgrade["requests"]
            assert (requests["before"]["cpu"], requests["after"]["cpu"]) == ("205m", "405m")
            # KubeVirt's memory overhead grows by 8Mi a vCPU
            assert int(requests["after"]["memory"]) - int(requests["before"]["memory"]) == 2 * 8 * 1024**2
            assert requests["before"] == summary["launcherPod"]["total"]["requests"]
            # pinned: the rendering is the revision's still
            assert summary["cpu"]["vcpus"] == 2
        # The unfiltered watch: MODIFIED for the pinned VMs (rendering unchanged, drift changed) and for
        # the VM on the live object (its rendering changed), nothing for b-0 and plain.
        await eventually(lambda: len(everything) >= 3)
        assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in everything) == [
            ("MODIFIED", "a-0"),
            ("MODIFIED", "a-1"),
            ("MODIFIED", "fresh"),
        ]
        assert await names(srv, "status.stale%3Dtrue") == ["a-0", "a-1"]
        assert await names(srv, "status.stale%3Dtrue,spec.instancetype.name%3Dlarge") == []
        one = (await srv.get(f"{BASE}/namespaces/{NS}/expandedvirtualmachines/a-0")).json()
        condition = {c["type"]: c for c in one["status"]["conditions"]}["Stale"]
        assert (condition["status"], condition["reason"]) == ("True", "RevisionOutdated")
        assert "changed since ControllerRevision" in condition["message"]
        assert "taking the latest revision: live" in condition["message"]

        table = (await srv.get(f"{ITEMS}", headers={"Accept": TABLE})).json()
        columns = [c["name"] for c in table["columnDefinitions"]]
        stale_at, upgrade_at = columns.index("Stale"), columns.index("Upgrade")
        assert table["columnDefinitions"][stale_at]["type"] == "boolean"
        rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
        assert {n: (c[stale_at], c[upgrade_at]) for n, c in rows.items()} == {
            "a-0": (True, "live"),
            "a-1": (True, "live"),
            "b-0": (False, None),
            "fresh": (False, None),
            "plain": (None, None),
        }

        # Beyond maxSockets (2 sockets x 4 = 8): taking the latest revision restarts, KubeVirt's message.
        fake.update(instancetype("small", NS, cpus=64))
        await eventually(lambda: len(stale_only) >= 4)
        assert {e["type"] for e in stale_only[2:]} == {"MODIFIED"}
        upgrade = stale_only[-1]["object"]["summary"]["upgrade"]
        assert upgrade["verdict"] == "restart" and "CPU sockets" in upgrade["message"]

        # Back to what the revisions hold: no longer stale, so the selector's watch sees them leave.
        fake.update(instancetype("small", NS, cpus=2))
        await eventually(lambda: len(stale_only) >= 6)
        assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in stale_only[4:]) == [
            ("DELETED", "a-0"),
            ("DELETED", "a-1"),
        ]
        assert await names(srv, "status.stale%3Dtrue") == []
    finally:
        for task in tasks:
            task.cancel()
    assert source.rendered is not None


async def test_the_object_gone_is_not_stale(
    fake: FakeKube, server: tuple[RunningServer, ClusterSource]
) -> None:
    srv, source = server
    fake.update(instancetype("small", NS, cpus=4))
    await eventually_value(lambda: names(srv, "status.stale%3Dtrue"), lambda found: found == ["a-0", "a-1"])
    fake.delete("instancetype.kubevirt.io/v1beta1", "VirtualMachineInstancetype", "small", NS)
    await eventually_value(lambda: names(srv, "status.stale%3Dtrue"), lambda found: found == [])
    item = (await srv.get(f"{BASE}/namespaces/{NS}/expandedvirtualmachines/a-0")).json()
    condition = {c["type"]: c for c in item["status"]["conditions"]}["Stale"]
    assert (condition["status"], condition["reason"]) == ("False", "ObjectNotFound")
    assert item["summary"]["cpu"]["vcpus"] == 2  # the revision still renders it
    assert source.rendered is not None
