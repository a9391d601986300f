"""The cluster source's watches on a real kube-apiserver that has nothing to say.

kube-apiserver sends a bookmark only when its watch cache has an event of that kind to take a
resourceVersion from, and then about once a minute; a watch of a kind nobody changes (no presets, no
KubeVirt CR: the usual case) gets no line at all until its ``timeoutSeconds``. tests/fakekube sends
bookmarks on every watch regardless, so this is only seen here.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from apiserver.sources.cluster import ClusterSource
from tests.fakekube.testing import eventually
from tests.realk8s.controlplane import ControlPlane

IDLE = 1.0  # the silence bound, cut from 120 s so that a few silences pass in a few seconds


async def test_silent_watches_are_resumed_quietly(
    control_plane: ControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    source = ClusterSource(
        kubeconfig=str(control_plane.admin_kubeconfig), watch_idle_timeout=IDLE, backoff=(0.05, 0.5)
    )
    caplog.set_level(logging.DEBUG, logger="apiserver.sources.cluster")
    await source.start()
    try:
        async with asyncio.timeout(10):
            await source.wait_synced()
        watching = [c for c in source.caches.values() if c.synced.is_set()]
        assert len(watching) >= 6
        await asyncio.sleep(3.5 * IDLE)
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        assert all(check.ok and "error" not in check.message for check in source.checks()), source.checks()
        # Each watch was resumed from where it stood (no list again), and still delivers changes.
        assert all(c.lists == 1 and c.watches >= 3 for c in watching), [
            (c.name, c.lists, c.watches) for c in watching
        ]
        name = f"quiet-{uuid.uuid4().hex[:8]}"
        control_plane.apply(
            {
                "apiVersion": "instancetype.kubevirt.io/v1beta1",
                "kind": "VirtualMachineClusterInstancetype",
                "metadata": {"name": name},
                "spec": {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}},
            }
        )
        cache = source.caches["VirtualMachineClusterInstancetype"]
        await eventually(lambda: ("", name) in cache.store, 5)
        assert cache.lists == 1
    finally:
        await source.close()
