"""The response cache never serves a stale answer; the sources' synchronous lookups agree with their reads.

Each test changes one input of a rendering (an instancetype, the VM, the KubeVirt CR) between two
otherwise identical requests and requires the second answer to follow the change, over the folder source
and over the cluster source against the fake API server.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from apiserver.http.endpoints.respcache import ResponseCache
from apiserver.http.keys import PIPELINE as DISPATCHER
from apiserver.render.objects import CLUSTER_INSTANCETYPE, INSTANCETYPE, ObjectRef
from apiserver.sources.base import MISSING, Peekable
from apiserver.sources.cluster import ClusterSource
from apiserver.sources.folder import FolderSource
from apiserver.sources.gather import render_and_record
from tests.support.fakekube import FakeKube
from tests.support.fakekube.testing import eventually, kubeconfig, synced
from tests.support.http_helpers import put_path, replace_file, running_server, vm_path

FAST = {"backoff": (0.02, 0.2), "read_timeout": 0.5}
IT_API = "instancetype.kubevirt.io/v1beta1"


def instancetype(cpus: int, memory: str = "2Gi") -> dict[str, Any]:
    return {
        "apiVersion": IT_API,
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "small", "namespace": "default"},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}},
    }


def vm(name: str = "fedora", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {
            "runStrategy": "Halted",
            "instancetype": {"kind": "VirtualMachineInstancetype", "name": "small"},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }


def cpus_of(answer: dict[str, Any]) -> Any:
    return answer["spec"]["template"]["spec"]["domain"]["cpu"]["sockets"]


# ---------------------------------------------------------------------- folder


@pytest.fixture
async def folder(tmp_path: Path) -> AsyncIterator[tuple[Path, FolderSource]]:
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / "vm.yaml").write_text(yaml.safe_dump(vm()))
    (directory / "it.yaml").write_text(yaml.safe_dump(instancetype(2)))
    source = FolderSource(directory, poll_interval=0.05, watch=False)
    yield directory, source


async def test_folder_changed_instancetype_changes_the_next_answer(
    folder: tuple[Path, FolderSource], tmp_path: Path
) -> None:
    directory, source = folder
    async with running_server(source, tmp_path) as srv:
        first = await srv.get(vm_path())
        again = await srv.get(vm_path())
        assert first.status == again.status == 200
        assert first.body == again.body and first.headers["etag"] == again.headers["etag"]
        assert srv.server.app[DISPATCHER].answered_at_once == 1  # the second GET: from the cache at once
        put_first = await srv.put(put_path(), data=orjson.dumps(vm("other")))
        assert put_first.status == 200 and cpus_of(put_first.json()) == 2

        reloads = source.reloads
        replace_file(directory / "it.yaml", yaml.safe_dump(instancetype(6)))
        await eventually(lambda: source.reloads > reloads)

        changed = await srv.get(vm_path())
        assert changed.status == 200 and cpus_of(changed.json()) == 6
        assert changed.headers["etag"] != first.headers["etag"]
        assert (await srv.get(vm_path())).body == changed.body
        assert srv.server.app[DISPATCHER].answered_at_once == 2
        put_changed = await srv.put(put_path(), data=orjson.dumps(vm("other")))
        assert cpus_of(put_changed.json()) == 6


async def test_folder_changed_vm_and_removed_instancetype(
    folder: tuple[Path, FolderSource], tmp_path: Path
) -> None:
    directory, source = folder
    async with running_server(source, tmp_path) as srv:
        first = await srv.get(vm_path())
        assert "labels" not in first.json()["metadata"]
        reloads = source.reloads
        replace_file(directory / "vm.yaml", yaml.safe_dump(vm(labels={"tier": "gold"})))
        await eventually(lambda: source.reloads > reloads)
        assert (await srv.get(vm_path())).json()["metadata"]["labels"] == {"tier": "gold"}

        reloads = source.reloads
        (directory / "it.yaml").unlink()
        await eventually(lambda: source.reloads > reloads)
        gone = await srv.get(vm_path())
        gone_again = await srv.get(vm_path())  # the 422 may come from the cache: it must be the same
        assert gone.status == gone_again.status == 422
        assert gone.body == gone_again.body and b"small" in gone.body

        replace_file(directory / "it.yaml", yaml.safe_dump(instancetype(3)))
        await eventually(lambda: source.reloads > reloads + 1)
        back = await srv.get(vm_path())
        assert back.status == 200 and cpus_of(back.json()) == 3


async def test_folder_peek_agrees_with_get(folder: tuple[Path, FolderSource]) -> None:
    _, source = folder
    await source.reload()
    assert isinstance(source, Peekable)
    for ref in (ObjectRef(INSTANCETYPE, "default", "small"), ObjectRef(INSTANCETYPE, "default", "nope")):
        assert source.peek(ref) is await source.get(ref)
    assert source.peek_vm("default", "fedora") is await source.get_vm("default", "fedora")
    assert source.peek_kubevirt() is await source.kubevirt()
    assert list(source.peek_presets("default")) == list(await source.presets("default"))


async def test_one_render_pass_reads_nothing_asynchronously_when_cached(
    folder: tuple[Path, FolderSource],
) -> None:
    _, source = folder
    await source.reload()
    calls: list[str] = []
    original_get = source.get

    async def counting_get(ref: ObjectRef) -> Any:
        calls.append(ref.name)
        return await original_get(ref)

    source.get = counting_get  # type: ignore[method-assign]
    stored = source.peek_vm("default", "fedora")
    assert isinstance(stored, dict)
    rendered = await render_and_record(source, stored, exact_names=True)
    assert rendered.error is None and calls == []
    assert rendered.objects == {
        ObjectRef(INSTANCETYPE, "default", "small"): source.peek(next(iter(rendered.objects)))
    }


async def test_cache_bounds_and_identity_check(folder: tuple[Path, FolderSource]) -> None:
    _, source = folder
    await source.reload()
    stored = source.peek_vm("default", "fedora")
    assert isinstance(stored, dict)
    rendered = await render_and_record(source, stored, exact_names=True)
    cache = ResponseCache(max_entries=2, max_bytes=10_000)
    for i in range(3):
        assert cache.put(("k", i), source, rendered, body=b"x" * 100) is not None
    assert len(cache) == 2 and cache.get(("k", 0), source) is None and cache.get(("k", 2), source)
    assert cache.put(("big",), source, rendered, body=b"x" * 5000) is None  # more than an eighth
    # A PUT key holds the body: its bytes count against the bounds too.
    assert cache.put(("put", b"y" * 1100), source, rendered, body=b"x" * 100, key_size=1100) is None
    kept = cache.put(("put", b"y" * 500), source, rendered, body=b"x" * 100, key_size=500)
    plain = cache.put(("k", 9), source, rendered, body=b"x" * 100)
    assert kept is not None and plain is not None and kept.size - plain.size == 500
    # A rendering that read an object the source no longer holds is never kept nor served.
    stale = copy.copy(rendered)
    stale.objects = {ref: copy.deepcopy(obj) for ref, obj in rendered.objects.items()}
    assert cache.put(("stale",), source, stale, body=b"x") is None


# ---------------------------------------------------------------------- cluster


@pytest.fixture
async def fake() -> AsyncIterator[FakeKube]:
    async with FakeKube(bookmark_interval=0.1) as f:
        yield f


@pytest.mark.parametrize("vm_cache", [False, True])
async def test_cluster_changed_instancetype_changes_the_next_answer(
    fake: FakeKube, tmp_path: Path, vm_cache: bool
) -> None:
    fake.create(vm())
    fake.create(instancetype(2))
    source = ClusterSource(
        kubeconfig=kubeconfig(fake, tmp_path / "kc"),
        vm_cache=vm_cache,
        **FAST,  # type: ignore[arg-type]
    )
    async with running_server(source, tmp_path) as srv:
        await synced(source, fake)
        first = await srv.get(vm_path())
        assert first.status == 200 and cpus_of(first.json()) == 2
        put_first = await srv.put(put_path(), data=orjson.dumps(vm("other")))
        assert cpus_of(put_first.json()) == 2

        fake.reset_log()
        assert (await srv.get(vm_path())).body == first.body
        assert (await srv.put(put_path(), data=orjson.dumps(vm("other")))).body == put_first.body
        reads = [r for r in fake.log if r.verb != "watch"]
        assert len(reads) == (0 if vm_cache else 1), reads  # a fresh VM read without the VM cache

        fake.update(instancetype(8))
        cache = source.caches["VirtualMachineInstancetype"]
        await eventually(lambda: cache.store[("default", "small")]["spec"]["cpu"]["guest"] == 8)
        changed = await srv.get(vm_path())
        assert changed.status == 200 and cpus_of(changed.json()) == 8
        put_changed = await srv.put(put_path(), data=orjson.dumps(vm("other")))
        assert cpus_of(put_changed.json()) == 8

        current = fake.get_object("kubevirt.io/v1", "VirtualMachine", "fedora", "default")
        assert current is not None
        fake.update({**current, "metadata": {**current["metadata"], "labels": {"tier": "gold"}}})
        if vm_cache:
            vms = source.caches["VirtualMachine"]
            await eventually(lambda: vms.store[("default", "fedora")]["metadata"].get("labels"))
        relabelled = await srv.get(vm_path())
        assert relabelled.json()["metadata"]["labels"] == {"tier": "gold"}


async def test_cluster_peek_misses_are_not_proof_of_absence(fake: FakeKube, tmp_path: Path) -> None:
    fake.create(instancetype(2))
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    await source.start()
    try:
        await synced(source, fake)
        small = ObjectRef(INSTANCETYPE, "default", "small")
        assert source.peek(small) is await source.get(small)
        assert source.peek(ObjectRef(INSTANCETYPE, "default", "new")) is MISSING
        assert source.peek(ObjectRef(CLUSTER_INSTANCETYPE, "", "new")) is MISSING
        assert source.peek_vm("default", "fedora") is MISSING  # VMs are read fresh without the VM cache
        assert source.peek_kubevirt() is await source.kubevirt()
        assert source.peek_presets("default") == await source.presets("default")
    finally:
        await source.close()


# ---------------------------------------------------------------------- what the cluster caches keep
