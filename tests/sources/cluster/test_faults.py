"""The cluster source when the API server misbehaves: broken watches, errors, slowness, outages."""

from __future__ import annotations

import asyncio
import datetime
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme

from apiserver.render.objects import ObjectRef
from apiserver.sources.base import SourceUnavailable
from apiserver.sources.cluster import ClusterSource, KubeClient, load_configuration
from tests.support.fakekube import FakeKube
from tests.support.fakekube.testing import eventually, instancetype, kubeconfig
from tests.support.patience import patience

FAST = {"backoff": (0.02, 0.2), "read_timeout": 0.5}
IT_REF = ObjectRef("VirtualMachineInstancetype", "default", "it")


@pytest.fixture
async def fake() -> AsyncIterator[FakeKube]:
    async with FakeKube(bookmark_interval=0.1) as f:
        f.create(instancetype("it"))
        yield f


@pytest.fixture
async def source(fake: FakeKube, tmp_path: Path) -> AsyncIterator[ClusterSource]:
    s = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    await s.start()
    async with asyncio.timeout(patience(5)):
        await s.wait_synced()
    await eventually(lambda: fake.open_watches == 6)
    fake.reset_log()
    yield s
    await s.close()


def cached(source: ClusterSource, name: str) -> bool:
    return ("default", name) in source.caches["VirtualMachineInstancetype"].store


@pytest.mark.parametrize("abort", [False, True], ids=["clean-end", "reset"])
async def test_dropped_watch_resumes_without_listing_again(
    fake: FakeKube, source: ClusterSource, abort: bool
) -> None:
    assert fake.drop_watches(abort=abort) == 6
    fake.create(instancetype("during"))
    await eventually(lambda: cached(source, "during"), 3)
    assert fake.count("list") == 0  # resumed from its resourceVersion
    assert fake.count("watch", resource="virtualmachineinstancetypes") >= 1


async def test_expired_watch_lists_again(fake: FakeKube, source: ClusterSource) -> None:
    cache = source.caches["VirtualMachineInstancetype"]
    fake.delete("instancetype.kubevirt.io/v1beta1", "VirtualMachineInstancetype", "it", "default")
    fake.create(instancetype("after"))
    await eventually(lambda: cached(source, "after"), 3)
    lists_before = cache.lists
    assert fake.expire_watches() == 6
    fake.create(instancetype("during-expiry"))
    await eventually(lambda: cached(source, "during-expiry") and cache.lists == lists_before + 1, 3)
    assert not cached(source, "it")
    assert fake.count("list", resource="virtualmachineinstancetypes") == 1


async def test_watch_timeout_reconnects(fake: FakeKube, tmp_path: Path) -> None:
    fake.max_watch_seconds = 0.2
    s = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    await s.start()
    try:
        async with asyncio.timeout(patience(5)):
            await s.wait_synced()
        # Watches that time out (after 0.2 s) and reconnect, again and again.
        await eventually(lambda: fake.count("watch", resource="virtualmachineinstancetypes") >= 3)
        fake.create(instancetype("late"))
        await eventually(lambda: cached(s, "late"), 3)
        assert fake.count("watch", resource="virtualmachineinstancetypes") >= 3
        assert fake.count("list", resource="virtualmachineinstancetypes") == 1
    finally:
        await s.close()


async def test_server_errors_become_source_unavailable(fake: FakeKube, source: ClusterSource) -> None:
    fake.fail(500, verbs=["get"])
    with pytest.raises(SourceUnavailable) as err:
        await source.get(ObjectRef("VirtualMachineInstancetype", "default", "uncached"))
    assert not err.value.timeout and "500" in str(err.value)
    fake.clear_faults()
    fake.fail(503, verbs=["get"], retry_after=7)
    with pytest.raises(SourceUnavailable) as err:
        await source.get(ObjectRef("ControllerRevision", "default", "rev"))
    assert err.value.retry_after == 7
    fake.clear_faults()
    fake.fail(403, verbs=["get"])
    with pytest.raises(SourceUnavailable, match="refused to read virtualmachines"):
        await source.get_vm("default", "vm")
    fake.clear_faults()
    # A warm read still answers while every request would fail.
    fake.fail(500)
    assert await source.get(IT_REF) is not None


async def test_slow_api_server_times_out_within_the_read_timeout(
    fake: FakeKube, source: ClusterSource
) -> None:
    fake.delay(5, verbs=["get"])
    start = time.monotonic()
    with pytest.raises(SourceUnavailable) as err:
        await source.get_vm("default", "vm")
    took = time.monotonic() - start
    assert err.value.timeout and 0.4 < took < min(patience(1.0), 4.0)  # cut at 0.5 s, not after the 5 s delay
    assert await source.get(IT_REF) is not None  # cached answers keep coming


async def test_api_server_down_and_back(fake: FakeKube, source: ClusterSource) -> None:
    await fake.stop()
    start = time.monotonic()
    with pytest.raises(SourceUnavailable) as err:
        await source.get(ObjectRef("VirtualMachineInstancetype", "default", "uncached"))
    assert not err.value.timeout and time.monotonic() - start < patience(0.5)
    assert await source.get(IT_REF) is not None  # served from the cache while down
    # The watches keep failing and back off, to the backoff's cap (0.02 s doubled four times is past 0.2).
    cache = source.caches["VirtualMachineInstancetype"]
    await eventually(lambda: cache.backoff.failures >= 4 and cache.last_error)
    fake.create(instancetype("while-down"))
    await fake.start()
    back = time.monotonic()
    took = await eventually(lambda: cached(source, "while-down"), 3)
    assert took < patience(1.0), f"recovered after {time.monotonic() - back:.2f}s"
    found = await source.get(ObjectRef("VirtualMachineInstancetype", "default", "while-down"))
    assert found is not None
    assert all(c.ok for c in source.checks())


async def test_source_started_while_api_server_is_down(fake: FakeKube, tmp_path: Path) -> None:
    path = kubeconfig(fake, tmp_path / "kc")
    await fake.stop()
    s = ClusterSource(kubeconfig=path, **FAST)  # type: ignore[arg-type]
    await s.start()
    try:
        # It has tried the API server and failed (the instancetypes' cache says why).
        await eventually(
            lambda: (
                "VirtualMachineInstancetype" in s.caches and s.caches["VirtualMachineInstancetype"].last_error
            )
        )
        assert not any(c.ok for c in s.checks())
        with pytest.raises(SourceUnavailable):
            await s.kubevirt()
        await fake.start()
        async with asyncio.timeout(patience(3)):
            await s.wait_synced()
        assert await s.get(IT_REF) is not None
    finally:
        await s.close()


@pytest.mark.parametrize("status", [503, 429])
async def test_a_starting_api_servers_retry_after_is_not_a_pause_but_throttling_is(
    fake: FakeKube, tmp_path: Path, status: int
) -> None:
    # kube-apiserver answers 503 with Retry-After 5 while it installs its paths (until about when it is
    # ready): the caches come back at their own pace. A 429 (throttled) is waited out as asked.
    fake.fail(status, count=1, verbs=["list"], path_contains="virtualmachineinstancetypes", retry_after=3)
    options = {**FAST, "backoff": (0.02, 5.0)}  # a cap above the Retry-After
    s = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **options)  # type: ignore[arg-type]
    start = time.monotonic()
    await s.start()
    try:
        async with asyncio.timeout(10):
            await s.wait_synced()
        took = time.monotonic() - start
        assert took < 2 if status == 503 else took >= 3, took
    finally:
        await s.close()


async def test_in_cluster_token_is_reread_after_rotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubernetes_asyncio.config import incluster_config

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_ctx = __import__("ssl").create_default_context(__import__("ssl").Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    token, ca_file = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("first")
    ca.cert_pem.write_to_path(str(ca_file))
    fake = FakeKube(token="first")
    await fake.start(ssl_context=server_ctx)
    # Re-read the token file on every request instead of once a minute, to see the rotation at once.
    monkeypatch.setattr(incluster_config, "TOKEN_REFRESH_PERIOD", datetime.timedelta(0))
    try:
        env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(fake.port)}
        config = await load_configuration(None, token_file=str(token), cert_file=str(ca_file), environ=env)
        client = KubeClient.from_configuration(config, read_timeout=2.0)
        s = ClusterSource(client, **FAST)  # type: ignore[arg-type]
        with pytest.raises(SourceUnavailable, match="not been started"):
            await s.get(IT_REF)
        fake.create(instancetype("it"))
        await s.start()
        try:
            async with asyncio.timeout(patience(3)):
                await s.wait_synced()
            await eventually(lambda: fake.open_watches == 6)
            assert 401 not in {r.status for r in fake.log} and fake.count("list") == 6
            fake.reset_log()
            token.write_text("second")
            fake.token = "second"
            assert await s.get(ObjectRef("VirtualMachineInstancetype", "default", "new")) is None
            fake.drop_watches()
            fake.create(instancetype("new"))
            await eventually(lambda: cached(s, "new"), 3)
            assert [(r.verb, r.status) for r in fake.log[:1]] == [("get", 404)]
            assert 401 not in {r.status for r in fake.log}
        finally:
            await s.close()
    finally:
        await fake.stop()


async def test_bad_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    s = ClusterSource(kubeconfig=str(tmp_path / "absent"))
    with pytest.raises(ValueError, match="cannot load the cluster configuration"):
        await s.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    with pytest.raises(ValueError, match="in-cluster service account") as raised:
        await load_configuration(None, environ=env)
    # Run outside a pod without flags, the message says what to give instead.
    assert str(raised.value).endswith(
        "outside a pod give --kubeconfig FILE (or set $KUBECONFIG), or --manifests DIR"
    )
