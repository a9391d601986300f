"""The long-lived heap is frozen out of the cyclic GC once the source is ready and after slow full
collections, so that full collections stop pausing the server (apiserver/runtime/gctune.py)."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from apiserver.render.objects import ObjectRef
from apiserver.runtime.gctune import GCTuner
from apiserver.sources.base import Check
from apiserver.sources.folder import FolderSource
from tests.support.http_helpers import start_process
from tests.support.waiting import eventually, poll

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    """Each test starts and ends with nothing frozen: the rest of the session keeps a normal GC."""
    gc.unfreeze()
    yield
    gc.unfreeze()


def frozen(obj: object) -> bool:
    """Tracked, yet in none of the collected generations: in the permanent (frozen) one."""
    assert gc.is_tracked(obj)
    return not any(o is obj for o in gc.get_objects())


def cached_object(i: int) -> dict[str, Any]:
    """Shaped like what a watch cache holds (nested dicts, so the GC tracks them)."""
    return {"metadata": {"name": f"it-{i}", "labels": {"a": "b"}}, "spec": {"cpu": {"guest": i}}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class SlowSource:
    """A source whose readiness check fails until ``ready`` is set (as the caches syncing)."""

    def __init__(self) -> None:
        self.ready = False
        self.objects = [cached_object(i) for i in range(100)]
        self.looked = 0  # how often its readiness was asked

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def get_vm(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return None

    async def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        return None

    async def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        return []

    async def kubevirt(self) -> Mapping[str, Any] | None:
        return None

    def checks(self) -> Sequence[Check]:
        self.looked += 1
        return [Check("cache-things", self.ready, "synced" if self.ready else "not synced yet")]


class Node:
    """Something to build a reference cycle with and watch through a weak reference."""

    peer: Node | None = None


async def test_the_source_objects_are_frozen_once_it_is_ready() -> None:
    source = SlowSource()
    tuner = GCTuner()
    gc.disable()  # only the tuner's own collection runs, so the garbage below is still there
    cycle = Node()
    cycle.peer = cycle
    gone = weakref.ref(cycle)
    del cycle
    task = asyncio.create_task(tuner.run(source, poll=0.01))
    try:
        # The tuner has found the source not ready a few times: nothing frozen for it.
        await eventually(lambda: source.looked >= 3)
        assert not frozen(source.objects[0])
        assert gc.get_freeze_count() == 0
        source.ready = True
        await eventually(lambda: tuner.stats.freezes, what="a freeze")
        assert tuner.stats.freezes == 1
        assert all(frozen(obj) for obj in source.objects)
        # Garbage is collected first, not frozen (where nothing could free it) with the live objects.
        assert gone() is None
        assert gc.get_freeze_count() > 0
        # Objects made afterwards (requests, new watch events) stay with the collector.
        later = cached_object(-1)
        assert not frozen(later)
    finally:
        gc.enable()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_folder_is_frozen_once_it_has_been_read() -> None:
    """The folder's readiness waits for its first read, so the freeze takes the objects read with it."""
    source = FolderSource(EXAMPLES, watch=False, poll_interval=60)
    assert [c.ok for c in source.checks()] == [False]
    tuner = GCTuner()
    task = asyncio.create_task(tuner.run(source, poll=0.0005))
    try:
        await source.start()
        await eventually(lambda: tuner.stats.freezes, what="a freeze")
        vm = source.peek_vm("default", "fedora")
        assert vm is not None
        assert frozen(vm)
    finally:
        task.cancel()
        await source.close()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_a_slow_full_collection_freezes_what_survived_it(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    tuner = GCTuner(budget_ms=0.0, min_interval=60.0, clock=clock)
    tuner.install()
    try:
        grown = [cached_object(i) for i in range(1000)]  # the caches grew (a re-list, many events)
        garbage: list[Any] = [cached_object(-1)]
        garbage.append(garbage)  # a cycle: only the collector can free it
        del garbage
        gc.collect()
        assert tuner.stats.freezes == 1
        assert tuner.stats.full_collections == 1
        assert all(frozen(obj) for obj in grown)
        frozen_after_first = gc.get_freeze_count()

        # Within min_interval another slow collection freezes nothing more.
        clock.now += 30
        newer = [cached_object(i) for i in range(10)]
        gc.collect()
        assert tuner.stats.freezes == 1
        assert not frozen(newer[0])

        # Later it does.
        clock.now += 31
        gc.collect()
        assert tuner.stats.freezes == 2
        assert frozen(newer[0])
        assert gc.get_freeze_count() > frozen_after_first
    finally:
        tuner.uninstall()
    # The callback does not log (it may run inside a logging handler); the next flush does.
    with caplog.at_level(logging.INFO, logger="apiserver.runtime.gctune"):
        assert not caplog.records
        tuner.flush_log()
    assert len(caplog.records) == 2
    assert "froze" in caplog.records[0].getMessage()
    assert "the survivors of a full collection of" in caplog.records[0].getMessage()


def test_fast_full_collections_and_young_collections_freeze_nothing() -> None:
    tuner = GCTuner(budget_ms=10_000.0)
    tuner.install()
    try:
        kept = [cached_object(i) for i in range(100)]
        gc.collect(0)
        gc.collect(1)
        gc.collect()
        assert tuner.stats.full_collections == 1
        assert tuner.stats.freezes == 0
        assert not frozen(kept[0])
        assert gc.get_freeze_count() == 0
    finally:
        tuner.uninstall()
    gc.collect()
    assert tuner.stats.full_collections == 1  # uninstalled: no longer called


def _wait_for(proc: Any, text: str, seconds: float = 10) -> bool:
    try:
        poll(repr(text), proc.log, lambda log: text in log, seconds)
    except AssertionError:
        return False
    return True


def test_serve_freezes_the_heap_once_the_folder_is_read(tmp_path: Path) -> None:
    proc = start_process(tmp_path, "--manifests", str(EXAMPLES))
    try:
        assert _wait_for(proc, "garbage collector: froze"), proc.log()
        line = next(x for x in proc.log().splitlines() if "garbage collector: froze" in x)
        assert "once the source was ready" in line
    finally:
        assert proc.stop() == 0


def test_serve_no_gc_freeze_leaves_the_collector_alone(tmp_path: Path) -> None:
    proc = start_process(tmp_path, "--manifests", str(EXAMPLES), "--no-gc-freeze", "--log-level", "debug")
    try:
        assert _wait_for(proc, "serving on")
        assert _wait_for(proc, f"read {EXAMPLES}: "), proc.log()  # the source is ready: a freeze would be due
        # With the tuner on, the freeze follows readiness within its poll (0.2 s): a window of five polls.
        time.sleep(1.0)
    finally:
        assert proc.stop() == 0
    assert "garbage collector" not in proc.log()
