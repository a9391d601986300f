"""The request timeout kept by one sweeper: slow requests get 504 on time, others are untouched."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from apiserver.http.deadlines import Deadlines
from tests.http_helpers import MemorySource, running_server, vm_path

VM: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm1", "namespace": "default"},
    "spec": {"template": {"spec": {"domain": {"devices": {}}}}},
}


async def _guarded(deadlines: Deadlines, seconds: float) -> str:
    """What the front middleware does around a handler, with a sleep as the handler."""
    entry = deadlines.start()
    assert entry is not None
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if entry.finish():
            return "timeout"
        raise
    entry.finish()
    return "done"


async def test_overdue_request_is_cancelled_at_its_deadline_and_others_finish() -> None:
    deadlines = Deadlines(0.2)
    began = time.monotonic()
    slow = asyncio.create_task(_guarded(deadlines, 5))
    fast = [asyncio.create_task(_guarded(deadlines, 0.01 * i)) for i in range(20)]
    assert await asyncio.gather(*fast) == ["done"] * 20
    assert await slow == "timeout"
    assert 0.19 <= time.monotonic() - began < 1.0
    assert slow.cancelling() == 0  # the timeout's cancellation was withdrawn, as asyncio.timeout does
    await asyncio.sleep(0)
    assert len(deadlines) == 0  # finished and expired records are gone
    deadlines.close()


async def test_each_request_has_its_own_deadline() -> None:
    deadlines = Deadlines(0.3, period=0.05)
    first = asyncio.create_task(_guarded(deadlines, 5))
    await asyncio.sleep(0.2)
    second = asyncio.create_task(_guarded(deadlines, 0.2))  # due at 0.5, done at 0.4
    began = time.monotonic()
    assert await first == "timeout"
    assert time.monotonic() - began < 0.2
    assert await second == "done"
    deadlines.close()


async def test_a_cancellation_from_elsewhere_is_not_a_timeout() -> None:
    deadlines = Deadlines(5)
    task = asyncio.create_task(_guarded(deadlines, 5))
    await asyncio.sleep(0.01)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the task should have stayed cancelled")
    deadlines.close()


async def test_finished_records_behind_a_stuck_request_are_dropped() -> None:
    deadlines = Deadlines(30, period=0.01)
    stuck = asyncio.create_task(_guarded(deadlines, 30))
    await asyncio.sleep(0)
    for _ in range(5000):  # requests that start and end without the loop running in between
        entry = deadlines.start()
        assert entry is not None and entry.finish() is False
    assert len(deadlines) == 5001
    await asyncio.sleep(0.05)
    assert len(deadlines) == 1  # compacted although the oldest request still runs
    assert not stuck.done()
    stuck.cancel()
    deadlines.close()


async def test_slow_request_is_504_while_fast_ones_are_answered(tmp_path: Path) -> None:
    slow_source = MemorySource([VM], delay=2)
    async with running_server(slow_source, tmp_path, request_timeout=0.3) as srv:
        began = time.monotonic()
        replies = await asyncio.gather(*(srv.get(vm_path(name="vm1")) for _ in range(3)))
        elapsed = time.monotonic() - began
        metrics = (await srv.get("/metrics")).body.decode()
    assert [r.status for r in replies] == [504] * 3
    assert all(r.json()["reason"] == "Timeout" and r.headers["retry-after"] == "1" for r in replies)
    assert elapsed < 1.5
    assert "kubevirt_expand_http_requests_in_flight 1.0" in metrics  # only the /metrics request itself
    assert 'code="504"' in metrics
