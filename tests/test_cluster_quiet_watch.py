"""A watch that stays silent is resumed, not failed (seen on a real kube-apiserver: it sends no bookmark
on a watch of a kind nobody changes; see tests/realk8s/test_quiet_watch.py). Here the fake is made as
quiet by a bookmark interval longer than the test."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from apiserver.sources.cluster import ClusterSource
from tests.fakekube import FakeKube
from tests.fakekube.testing import eventually, instancetype, kubeconfig


async def test_silence_longer_than_the_idle_timeout_is_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="apiserver.sources.cluster")
    async with FakeKube(bookmark_interval=3600) as fake:
        source = ClusterSource(
            kubeconfig=kubeconfig(fake, tmp_path / "kc"), watch_idle_timeout=0.2, backoff=(0.5, 1.0)
        )
        await source.start()
        try:
            async with asyncio.timeout(5):
                await source.wait_synced()
            await asyncio.sleep(0.9)
            assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
            caches = source.caches.values()
            assert all(c.last_error == "" for c in caches)
            assert all("error" not in check.message for check in source.checks())
            # Resumed at once (no backoff) from its resourceVersion (no list), again and again.
            cache = source.caches["VirtualMachineInstancetype"]
            assert cache.lists == 1 and cache.watches >= 4
            fake.create(instancetype("late"))
            await eventually(lambda: ("default", "late") in cache.store, 2)
            assert cache.lists == 1
        finally:
            await source.close()
