"""The fake API server itself behaves like kube-apiserver where the cluster source relies on it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.support.fakekube import FLAVOR_RESOURCES, FakeKube

IT = "instancetype.kubevirt.io/v1beta1"


def instancetype(name: str, ns: str = "default", cpus: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": IT,
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": "1Gi"}},
    }


@pytest.fixture
async def fake() -> AsyncIterator[FakeKube]:
    async with FakeKube(bookmark_interval=0.05) as f:
        yield f


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def get(http: aiohttp.ClientSession, url: str, **params: str) -> tuple[int, Any]:
    async with http.get(url, params=params) as resp:
        return resp.status, await resp.json()


async def read_events(resp: aiohttp.ClientResponse, n: int) -> list[dict[str, Any]]:
    out = []
    while len(out) < n:
        line = await asyncio.wait_for(resp.content.readline(), 2)
        if not line:
            break
        out.append(json.loads(line))
    return out


async def test_get_list_and_not_found(fake: FakeKube, http: aiohttp.ClientSession) -> None:
    fake.create(instancetype("a"))
    base = f"{fake.url}/apis/{IT}/namespaces/default/virtualmachineinstancetypes"
    code, body = await get(http, f"{base}/a")
    assert (
        code == 200 and body["kind"] == "VirtualMachineInstancetype" and body["metadata"]["resourceVersion"]
    )
    code, body = await get(http, f"{base}/nope")
    assert code == 404
    assert body["message"] == 'virtualmachineinstancetypes.instancetype.kubevirt.io "nope" not found'
    assert body["reason"] == "NotFound"
    assert body["details"] == {
        "name": "nope",
        "group": "instancetype.kubevirt.io",
        "kind": "virtualmachineinstancetypes",
    }
    code, body = await get(http, base)
    assert code == 200 and [i["metadata"]["name"] for i in body["items"]] == ["a"]
    assert body["metadata"]["resourceVersion"] == str(fake.current_rv)
    code, body = await get(http, f"{fake.url}/api/v1/namespaces/default/persistentvolumeclaims/x")
    assert body["message"] == 'persistentvolumeclaims "x" not found' and "group" not in body["details"]
    assert [(r.verb, r.name) for r in fake.log] == [("get", "a"), ("get", "nope"), ("list", ""), ("get", "x")]


async def test_builtin_list_items_have_no_kind(fake: FakeKube, http: aiohttp.ClientSession) -> None:
    fake.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": "r", "namespace": "ns"},
            "revision": 1,
        }
    )
    code, body = await get(http, f"{fake.url}/apis/apps/v1/controllerrevisions")
    assert code == 200 and "kind" not in body["items"][0] and body["kind"] == "ControllerRevisionList"


async def test_discovery_and_missing_crd(http: aiohttp.ClientSession) -> None:
    async with FakeKube() as fake:
        code, body = await get(http, f"{fake.url}/apis")
        assert "flavor.kubevirt.io" not in [g["name"] for g in body["groups"]]
        async with http.get(f"{fake.url}/apis/flavor.kubevirt.io/v1alpha1") as resp:
            # As kube-apiserver: plain text, no Status (see test_fake_fidelity.py).
            assert resp.status == 404 and await resp.text() == "404 page not found\n"
            assert resp.content_type == "text/plain"
        code, body = await get(http, f"{fake.url}/apis/instancetype.kubevirt.io")
        assert code == 200 and body["preferredVersion"]["version"] == "v1beta1"
    async with FakeKube(resources=[*fake.resources, *FLAVOR_RESOURCES]) as fake2:
        code, body = await get(http, f"{fake2.url}/apis/flavor.kubevirt.io/v1alpha1")
        assert code == 200 and {r["name"] for r in body["resources"]} == {
            "virtualmachineflavors",
            "virtualmachineclusterflavors",
        }


async def test_watch_from_rv_bookmarks_and_expiry(fake: FakeKube, http: aiohttp.ClientSession) -> None:
    first = fake.create(instancetype("a"))
    fake.create(instancetype("b"))
    url = f"{fake.url}/apis/{IT}/virtualmachineinstancetypes"
    params = {
        "watch": "true",
        "resourceVersion": first["metadata"]["resourceVersion"],
        "allowWatchBookmarks": "true",
    }
    async with http.get(url, params=params) as resp:
        events = await read_events(resp, 1)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "b")]
        fake.delete(IT, "VirtualMachineInstancetype", "a", "default")
        events = await read_events(resp, 2)
        assert events[0]["type"] == "DELETED" and events[1]["type"] == "BOOKMARK"
        assert events[1]["object"]["metadata"]["resourceVersion"] == str(fake.current_rv)
        assert fake.expire_watches() == 1
        events = await read_events(resp, 2)
        assert len(events) == 1 and events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
        assert events[0]["object"]["reason"] == "Expired"
    async with http.get(url, params=params) as resp:
        events = await read_events(resp, 1)
        assert events[0]["object"]["code"] == 410


async def test_watch_timeout_and_drop(fake: FakeKube, http: aiohttp.ClientSession) -> None:
    url = f"{fake.url}/apis/{IT}/virtualmachineinstancetypes"
    async with http.get(url, params={"watch": "1", "timeoutSeconds": "0.2"}) as resp:
        assert await asyncio.wait_for(resp.content.read(), 2) == b""
    async with http.get(url, params={"watch": "1"}) as resp:
        await asyncio.sleep(0.05)
        assert fake.drop_watches(abort=True) == 1
        with pytest.raises(aiohttp.ClientError):
            await asyncio.wait_for(resp.content.read(), 2)


async def test_faults_latency_token_and_restart(fake: FakeKube, http: aiohttp.ClientSession) -> None:
    fake.create(instancetype("a"))
    url = f"{fake.url}/apis/{IT}/namespaces/default/virtualmachineinstancetypes/a"
    fake.fail(503, count=1, retry_after=3)
    async with http.get(url) as resp:
        assert resp.status == 503 and resp.headers["Retry-After"] == "3"
    assert (await get(http, url))[0] == 200
    fake.delay(0.3)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await get(http, url)
    fake.clear_faults()
    fake.token = "secret"
    assert (await get(http, url))[0] == 401
    async with http.get(url, headers={"Authorization": "Bearer secret"}) as resp:
        assert resp.status == 200
    fake.token = None
    port = fake.port
    await fake.stop()
    with pytest.raises(aiohttp.ClientConnectionError):
        await get(http, url)
    fake.update(instancetype("a", cpus=4))
    await fake.start()
    assert fake.port == port
    code, body = await get(http, url)
    assert code == 200 and body["spec"]["cpu"]["guest"] == 4 and body["metadata"]["generation"] == 2


async def test_add_handler(http: aiohttp.ClientSession) -> None:
    from aiohttp import web

    async def review(request: web.Request) -> web.Response:
        return web.json_response({"status": {"authenticated": True}}, status=201)

    fake = FakeKube()
    fake.add_handler("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    async with fake:
        async with http.post(f"{fake.url}/apis/authentication.k8s.io/v1/tokenreviews", json={}) as resp:
            assert resp.status == 201
        assert fake.count("create") == 1


def test_status_writes_only_where_the_crd_has_the_subresource() -> None:
    """``update_status`` is kube-apiserver's ``/status``: a kind without the subresource has no such path;
    a VM's status write reaches watchers as one MODIFIED event with the rest as stored."""
    fake = FakeKube()
    kv = {"apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "metadata": {"name": "kv", "namespace": "ns"}}
    fake.create(kv)
    with pytest.raises(KeyError, match="no status subresource"):
        fake.update_status({**kv, "status": {"phase": "Deployed"}})
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "ns"},
    }
    with pytest.raises(KeyError, match="not found"):
        fake.update_status({**vm, "status": {}})
    created = fake.create({**vm, "spec": {"running": False}, "status": {"created": True}})
    written = fake.update_status({**vm, "spec": {"running": True}, "status": {"created": True}})
    assert "status" not in created and written["spec"] == {"running": False}
    assert written["status"] == {"created": True} and written["metadata"]["generation"] == 1
    assert int(written["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
