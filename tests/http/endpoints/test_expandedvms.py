"""The rendered-VM collection (expandedvirtualmachines) over the fake API server: get, list, pages,
selectors, Tables, watch (instancetype edits, label moves, resume, 410), discovery and OpenAPI.
The same behaviour against the real kube-apiserver and kubectl: tests/realk8s/test_collection.py."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from apiserver.render.kubernetes.quantitymath import readable_bytes
from apiserver.render.launcher import launch
from apiserver.sources.cluster import ClusterSource
from tests.support.fakekube import FakeKube
from tests.support.fakekube.testing import eventually, instancetype, kubeconfig, obj, preference, synced
from tests.support.http_helpers import RunningServer, running_server
from tests.support.patience import patience
from tests.support.waiting import eventually_value

FAST = {"backoff": (0.02, 0.2), "read_timeout": 2.0}
BASE = "/apis/expand.kubevirt-expand.io/v1"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def vm(
    name: str, ns: str = "default", it: str | None = "small", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "running": False,
        "template": {"spec": {"domain": {"devices": {}}}},
    }
    if it is not None:
        spec["instancetype"] = {"name": it, "kind": "VirtualMachineInstancetype"}
        spec["preference"] = {"name": "cores", "kind": "VirtualMachinePreference"}
    meta: dict[str, Any] = {"labels": labels} if labels else {}
    return obj("VirtualMachine", name, ns, api="kubevirt.io/v1", metadata=meta, spec=spec)


@pytest.fixture
async def fake() -> AsyncIterator[FakeKube]:
    async with FakeKube(bookmark_interval=0.1) as f:
        yield f


@pytest.fixture
async def server(fake: FakeKube, tmp_path: Path) -> AsyncIterator[tuple[RunningServer, ClusterSource]]:
    fake.create(instancetype("small", cpus=2))
    fake.create(instancetype("big", "ns2", cpus=8))
    fake.create(preference("cores"))
    fake.create(preference("cores", "ns2"))
    for i in range(5):
        fake.create(vm(f"vm-{i}", labels={"tier": "web" if i % 2 else "db"}))
    fake.create(vm("other", ns="ns2", it="big"))
    fake.create(vm("broken", ns="ns2", it="missing"))
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), vm_cache=True, **FAST)  # type: ignore[arg-type]
    async with running_server(source, tmp_path) as srv:
        await synced(source, fake)
        assert source.rendered is not None
        await asyncio.wait_for(source.rendered.ready.wait(), 5)
        yield srv, source


async def test_list_all_namespaces(server: tuple[RunningServer, ClusterSource]) -> None:
    srv, _ = server
    reply = await srv.get(f"{BASE}/expandedvirtualmachines")
    assert reply.status == 200, reply.body
    doc = reply.json()
    assert doc["kind"] == "ExpandedVirtualMachineList"
    names = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in doc["items"]]
    assert names == sorted(names) and len(names) == 7
    first = doc["items"][0]
    assert first["summary"]["cpu"] == {"sockets": 1, "cores": 2, "threads": 1, "vcpus": 2}
    assert first["summary"]["memory"] == {"guest": "1Gi"}
    assert first["summary"]["instancetype"] == {
        "kind": "VirtualMachineInstancetype",
        "name": "small",
        "source": "Object",
        "stale": False,  # no revision captured: it uses the live object (see test_drift.py)
    }
    broken = next(i for i in doc["items"] if i["metadata"]["name"] == "broken")
    cond = broken["status"]["conditions"][0]
    assert cond["status"] == "False" and cond["reason"] == "Invalid"
    assert "missing" in cond["message"] and "virtualMachine" not in broken


async def test_item_equals_expand_spec(server: tuple[RunningServer, ClusterSource]) -> None:
    srv, _ = server
    item = (await srv.get(f"{BASE}/namespaces/default/expandedvirtualmachines/vm-1")).json()
    spec = await srv.get(
        "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm-1/expand-spec"
    )
    assert spec.status == 200
    assert item["virtualMachine"] == spec.json()


async def test_pages_and_selectors(server: tuple[RunningServer, ClusterSource]) -> None:
    srv, _ = server
    seen: list[str] = []
    token = ""
    versions = set()
    while True:
        q = f"?limit=2&continue={token}" if token else "?limit=2"
        doc = (await srv.get(f"{BASE}/expandedvirtualmachines{q}")).json()
        seen += [i["metadata"]["name"] for i in doc["items"]]
        versions.add(doc["metadata"]["resourceVersion"])
        token = doc["metadata"].get("continue", "")
        if not token:
            break
    assert len(seen) == 7 and len(versions) == 1
    web = (
        await srv.get(f"{BASE}/namespaces/default/expandedvirtualmachines?labelSelector=tier%3Dweb")
    ).json()
    assert [i["metadata"]["name"] for i in web["items"]] == ["vm-1", "vm-3"]
    named = (await srv.get(f"{BASE}/expandedvirtualmachines?fieldSelector=metadata.name%3Dother")).json()
    assert [i["metadata"]["namespace"] for i in named["items"]] == ["ns2"]
    bad = await srv.get(f"{BASE}/expandedvirtualmachines?fieldSelector=spec.x%3Dy")
    assert bad.status == 400 and "spec.x" in bad.json()["message"]
    bad = await srv.get(f"{BASE}/expandedvirtualmachines?labelSelector=a%20in%20()")
    assert bad.status == 400


async def test_selectors_and_tokens_filter_inside_the_path_s_namespace(
    server: tuple[RunningServer, ClusterSource],
) -> None:
    """The path's namespace is the request's scope: a field selector naming another namespace selects
    nothing (as kube-apiserver), a page token of another namespace's list is refused, and the list of
    every namespace narrows to the one a selector names."""
    srv, _ = server
    for selector in (
        "metadata.namespace%3Dns2",
        "metadata.namespace%3D%3Dns2",
        "metadata.namespace%21%3Ddefault",
    ):
        doc = (
            await srv.get(f"{BASE}/namespaces/default/expandedvirtualmachines?fieldSelector={selector}")
        ).json()
        assert doc["items"] == [], (selector, doc)
    named = await srv.get(
        f"{BASE}/namespaces/default/expandedvirtualmachines?fieldSelector=metadata.name%3Dother,metadata.namespace%3Dns2"
    )
    assert named.status == 200 and named.json()["items"] == []
    ns2 = (await srv.get(f"{BASE}/expandedvirtualmachines?fieldSelector=metadata.namespace%3Dns2")).json()
    assert sorted(i["metadata"]["name"] for i in ns2["items"]) == ["broken", "other"]
    page = (await srv.get(f"{BASE}/namespaces/ns2/expandedvirtualmachines?limit=1")).json()
    token = page["metadata"]["continue"]
    replayed = await srv.get(f"{BASE}/namespaces/default/expandedvirtualmachines?limit=1&continue={token}")
    assert replayed.status == 400 and "another namespace" in replayed.json()["message"]
    everywhere = (await srv.get(f"{BASE}/expandedvirtualmachines?limit=1")).json()["metadata"]["continue"]
    assert (
        await srv.get(f"{BASE}/namespaces/ns2/expandedvirtualmachines?continue={everywhere}")
    ).status == 400
    # A token made up to name ns2's key inside default's list.
    forged = base64.urlsafe_b64encode(
        json.dumps({"v": page["metadata"]["resourceVersion"], "k": ["ns2", ""], "n": "default"}).encode()
    ).decode()
    assert (
        await srv.get(f"{BASE}/namespaces/default/expandedvirtualmachines?continue={forged}")
    ).status == 400
    # A watch: nothing of ns2 at its start, and nothing of it after (the watch runs out at its timeout).
    query = "watch=1&timeoutSeconds=1&fieldSelector=metadata.namespace%3Dns2"
    async with srv.session.get(
        srv.url + f"{BASE}/namespaces/default/expandedvirtualmachines?{query}"
    ) as resp:
        assert resp.status == 200 and await resp.read() == b""


async def test_table(server: tuple[RunningServer, ClusterSource]) -> None:
    srv, _ = server
    doc = (await srv.get(f"{BASE}/namespaces/ns2/expandedvirtualmachines", headers={"Accept": TABLE})).json()
    assert doc["kind"] == "Table"
    names = [c["name"] for c in doc["columnDefinitions"] if c["priority"] == 0]
    assert names == [
        "Name",
        "Instancetype",
        "Preference",
        "CPU",
        "Memory",
        "CPU-Request",
        "Memory-Request",
        "Status",
        "Stale",
        "Upgrade",
        "Age",
    ]
    rows = {r["cells"][0]: r["cells"] for r in doc["rows"]}
    assert rows["other"][1:5] == ["big", "cores", 8, "1Gi"]
    assert rows["other"][7] == "Rendered"
    # the pod's requests: the template service's, for the VM as the collection rendered it
    item = (await srv.get(f"{BASE}/namespaces/ns2/expandedvirtualmachines/other")).json()
    pod = launch(item["virtualMachine"]).pod.to_json()["total"]["requests"]
    assert rows["other"][5:7] == [pod["cpu"], readable_bytes(pod["memory"])]
    assert re.fullmatch(r"[0-9]+(Ki|Mi|Gi)", rows["other"][6]), rows["other"][6]  # not raw bytes
    assert item["summary"]["launcherPod"]["total"]["requests"] == pod  # the exact quantity
    # a VM that does not render has no pod: null cells
    assert rows["broken"][5:8] == [None, None, "Invalid"]
    # A typed column carries null where the VM does not render (kube-apiserver's Tables do; kubectl
    # prints <none>), never a string where an integer is declared.
    types = [c["type"] for c in doc["columnDefinitions"]]
    assert types[3] == "integer" and rows["broken"][3] is None
    for cells in rows.values():
        for kind, cell in zip(types, cells, strict=False):
            if kind == "integer":
                assert cell is None or type(cell) is int, cells


async def _watch(srv: RunningServer, query: str, events: list[dict[str, Any]], stop: asyncio.Event) -> None:
    async with srv.session.get(srv.url + f"{BASE}/expandedvirtualmachines?watch=true&{query}") as resp:
        assert resp.status == 200
        async for line in resp.content:
            if line.strip():
                events.append(json.loads(line))
            if stop.is_set():
                return


async def test_watch_instancetype_edit(fake: FakeKube, server: tuple[RunningServer, ClusterSource]) -> None:
    srv, source = server
    listed = (await srv.get(f"{BASE}/expandedvirtualmachines")).json()
    rv = listed["metadata"]["resourceVersion"]
    events: list[dict[str, Any]] = []
    stop = asyncio.Event()
    task = asyncio.create_task(_watch(srv, f"resourceVersion={rv}", events, stop))
    # The watch holds its place (its starting point fixed) before the edit it is to see.
    await eventually_value(lambda: srv.metric("kubevirt_expand_watches_held"), lambda held: held == 1)
    fake.update(instancetype("small", cpus=4))
    await eventually(lambda: len(events) >= 5)
    assert sorted(e["object"]["metadata"]["name"] for e in events) == [f"vm-{i}" for i in range(5)]
    assert all(e["type"] == "MODIFIED" for e in events)
    assert {e["object"]["summary"]["cpu"]["vcpus"] for e in events} == {4}
    last = events[-1]["object"]["metadata"]["resourceVersion"]
    # A watch from the last event's version gets nothing again; one from the list's gets all five.
    again: list[dict[str, Any]] = []
    t2 = asyncio.create_task(_watch(srv, f"resourceVersion={rv}", again, stop))
    await eventually(lambda: len(again) >= 5)
    fake.delete("kubevirt.io/v1", "VirtualMachine", "vm-0", "default")
    await eventually(lambda: any(e["type"] == "DELETED" for e in events))
    assert events[-1]["object"]["metadata"]["name"] == "vm-0"
    assert last != events[-1]["object"]["metadata"]["resourceVersion"]
    stop.set()
    for t in (task, t2):
        t.cancel()
    # unchanged re-renders make no events
    assert source.rendered is not None
    rendered = source.rendered
    before, unchanged = len(rendered._events), rendered.unchanged
    fake.update(
        {
            **instancetype("small", cpus=4),
            "metadata": {"name": "small", "namespace": "default", "labels": {"x": "y"}},
        }
    )
    # The four VMs left (vm-0 is deleted) rendered again and found the same, the change worked through...
    await eventually(lambda: rendered.unchanged == unchanged + 4 and not rendered.pending)
    assert len(rendered._events) == before  # ...and no event


async def test_watch_too_old_and_bad_version(server: tuple[RunningServer, ClusterSource]) -> None:
    srv, _ = server
    reply = await srv.get(f"{BASE}/expandedvirtualmachines?watch=true&resourceVersion=1.0.0.0.0.0.0.0.0")
    assert reply.status == 200
    event = json.loads(reply.body.splitlines()[0])
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
    bad = await srv.get(f"{BASE}/expandedvirtualmachines?resourceVersion=abc")
    assert bad.status == 400


async def test_discovery_and_openapi(server: tuple[RunningServer, ClusterSource]) -> None:
    srv, _ = server
    doc = (await srv.get(BASE)).json()
    evm = next(r for r in doc["resources"] if r["name"] == "expandedvirtualmachines")
    assert evm["verbs"] == ["get", "list", "watch"] and evm["shortNames"] == ["evm", "evms"]
    groups = [g["name"] for g in (await srv.get("/apis")).json()["groups"]]
    assert groups == ["subresources.kubevirt.io", "expand.kubevirt-expand.io"]
    v3 = (await srv.get("/openapi/v3/apis/expand.kubevirt-expand.io/v1")).json()
    assert "io.kubevirt-expand.expand.v1.ExpandedVirtualMachine" in v3["components"]["schemas"]


async def test_every_member_of_an_items_summary_is_in_the_schema(
    server: tuple[RunningServer, ClusterSource],
) -> None:
    """``kubectl explain evm.summary.launcherPod`` and generated clients read the schema: each member the
    items carry is declared (launcherPod as launch-spec's pod), in v2 and v3."""
    srv, _ = server
    items = (await srv.get(f"{BASE}/expandedvirtualmachines")).json()["items"]
    members = {key for item in items for key in item["summary"]}
    assert "launcherPod" in members
    summary = "io.kubevirt-expand.expand.v1.Summary"
    pod = "io.kubevirt-expand.expand.v1.LauncherPod"
    v2 = (await srv.get("/openapi/v2")).json()["definitions"]
    assert members <= set(v2[summary]["properties"])
    assert v2[summary]["properties"]["launcherPod"]["$ref"] == f"#/definitions/{pod}"
    assert {"containers", "initContainers", "total", "memoryOverhead"} <= set(v2[pod]["properties"])
    v3 = (await srv.get("/openapi/v3/apis/expand.kubevirt-expand.io/v1")).json()["components"]["schemas"]
    assert members <= set(v3[summary]["properties"])
    declared = v3[summary]["properties"]["launcherPod"]
    assert declared["allOf"] == [{"$ref": f"#/components/schemas/{pod}"}] and declared["description"]
    assert pod in v3


async def test_not_served_without_vm_cache(fake: FakeKube, tmp_path: Path) -> None:
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    async with running_server(source, tmp_path) as srv:
        await synced(source, fake)
        reply = await srv.get(f"{BASE}/expandedvirtualmachines")
        assert reply.status == 404 and "--vm-cache" in reply.json()["message"]
        # The group-version is there (its APIService stays Available), without the collection (the
        # change preview, which needs no VM cache, is served).
        doc = (await srv.get(BASE)).json()
        assert [r["name"] for r in doc["resources"]] == ["virtualmachinechangepreviews"]


async def test_expand_spec_answers_from_the_store(server: tuple[RunningServer, ClusterSource]) -> None:
    """One store for GET expand-spec, list and watch: a warm GET renders nothing, answers the item's
    rendered VM with its ETag, and 304 to that ETag."""
    srv, source = server
    assert source.rendered is not None
    item = source.rendered._items[("default", "vm-2")]
    renders = source.rendered.renders
    path = "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm-2/expand-spec"
    for _ in range(3):
        reply = await srv.get(path)
        assert reply.status == 200 and reply.body == item.rendered
        assert reply.headers["etag"] == item.etag
    assert (await srv.get(path, headers={"If-None-Match": item.etag})).status == 304
    broken = await srv.get(
        "/apis/subresources.kubevirt.io/v1/namespaces/ns2/virtualmachines/broken/expand-spec"
    )
    assert broken.status == 422 and "missing" in broken.json()["message"]
    assert source.rendered.renders == renders


async def test_a_long_list_is_streamed_whole(
    server: tuple[RunningServer, ClusterSource], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list longer than one write goes out in pieces under an exact Content-Length."""
    from apiserver.http.endpoints import expandedvms as module

    srv, _ = server
    whole = (await srv.get(f"{BASE}/expandedvirtualmachines")).body
    monkeypatch.setattr(module, "_CHUNK", 100)
    streamed = await srv.get(f"{BASE}/expandedvirtualmachines")
    assert streamed.status == 200 and streamed.body == whole
    assert int(streamed.headers["content-length"]) == len(whole)


async def test_a_kind_looked_for_again_keeps_versions_resumable(
    fake: FakeKube, server: tuple[RunningServer, ClusterSource]
) -> None:
    """The legacy flavor kinds are not installed and are looked for again now and then: that must not
    make every version 410 (it once reset the log each time)."""
    srv, source = server
    version = (await srv.get(f"{BASE}/expandedvirtualmachines?limit=1")).json()["metadata"]["resourceVersion"]
    flavor = next(c for c in source.caches.values() if c.missing is True)
    await flavor._discover()
    reply = await srv.get(
        f"{BASE}/expandedvirtualmachines?watch=true&resourceVersion={version}&timeoutSeconds=1"
    )
    assert reply.status == 200 and b'"ERROR"' not in reply.body


async def test_readyz_verbose_shows_no_object_counts(server: tuple[RunningServer, ClusterSource]) -> None:
    """/readyz is open to anyone: each cache and the collection say ok, not how many objects the
    cluster has of each kind (/metrics, which is authorized, does)."""
    srv, _ = server
    reply = await srv.get("/readyz?verbose")
    assert reply.status == 200
    lines = reply.body.decode().splitlines()
    cache_lines = [line for line in lines if line.startswith(("[+]cache-", "[+]collection"))]
    assert "[+]collection ok" in cache_lines and "[+]cache-virtualmachines ok" in cache_lines
    shapes = (" ok", " ok - not installed in this cluster")
    assert all(line.endswith(shapes) for line in cache_lines), lines
    assert not [line for line in lines if any(ch.isdigit() for ch in line)], lines


async def test_a_relist_that_changes_many_vms_is_one_event_each_in_key_order(
    fake: FakeKube, tmp_path: Path
) -> None:
    """kube-apiserver restarted while VMs were edited, created and deleted: its fresh watch cache answers
    410, the VM cache lists again, and more VMs changed than the store puts in order from its sorted keys
    (1,000): one event per changed VM, in key order, of the right type, the last under the version the
    list reached; a watch from before the outage gets exactly those, and a list after shows the result."""
    fake.create(instancetype("small", cpus=2))
    fake.create(preference("cores"))
    for i in range(1_100):
        fake.create(vm(f"vm-{i:04d}"))
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), vm_cache=True, **FAST)  # type: ignore[arg-type]
    async with running_server(source, tmp_path) as srv:
        await synced(source, fake)
        assert source.rendered is not None
        await asyncio.wait_for(source.rendered.ready.wait(), patience(10))
        rv = (await srv.get(f"{BASE}/expandedvirtualmachines?limit=1")).json()["metadata"]["resourceVersion"]
        await fake.stop()
        for i in range(0, 1_100, 2):  # every other VM edited
            fake.update(vm(f"vm-{i:04d}", labels={"edited": "yes"}))
        for i in range(1_050, 1_100, 2):  # some of the others deleted, new ones created
            fake.delete("kubevirt.io/v1", "VirtualMachine", f"vm-{i + 1:04d}", "default")
        for i in range(1_100, 1_120):
            fake.create(vm(f"vm-{i:04d}"))
        await fake.start()
        events: list[dict[str, Any]] = []
        stop = asyncio.Event()
        task = asyncio.create_task(_watch(srv, f"resourceVersion={rv}", events, stop))
        rendered = source.rendered
        try:
            await eventually(lambda: len(events) >= 550 + 25 + 20, 10)
            # The watch has sent the collection's whole log: the event it sent last is the log's last
            # (its version is that change's own), and no change is still being worked through. Any
            # further event would be of a later change.
            await eventually(
                lambda: (
                    not rendered.pending
                    and events[-1]["object"]["metadata"]["resourceVersion"] == rendered._events[-1].version
                    and events[-1]["object"]["metadata"]["name"] == rendered._events[-1].item.key[1]
                )
            )
        finally:
            stop.set()
            task.cancel()
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    expected = sorted(
        [("MODIFIED", f"vm-{i:04d}") for i in range(0, 1_100, 2)]
        + [("DELETED", f"vm-{i + 1:04d}") for i in range(1_050, 1_100, 2)]
        + [("ADDED", f"vm-{i:04d}") for i in range(1_100, 1_120)],
        key=lambda event: event[1],
    )
    assert seen == expected
    assert all(
        e["object"]["metadata"]["labels"] == {"edited": "yes"} for e in events if e["type"] == "MODIFIED"
    )
    versions = [e["object"]["metadata"]["resourceVersion"] for e in events]
    assert len(set(versions[:-1])) == 1 and versions[-1] != versions[0]  # the last carries the new version
