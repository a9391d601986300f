"""The request timeout kept by one sweeper: slow requests get 504 on time, others are untouched."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from apiserver.http.transport.deadlines import Deadlines
from tests.support.http_helpers import MemorySource, running_server, vm_path
from tests.support.patience import patience
from tests.support.waiting import eventually

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


# The timelines below are in units of 0.1 s stretched on a loaded machine, where the event loop stalls for
# tens of milliseconds at a time: more than the margins of a timeline drawn in hundredths of a second.


async def test_overdue_request_is_cancelled_at_its_deadline_and_others_finish() -> None:
    unit = patience(0.1)
    deadlines = Deadlines(2 * unit)
    began = time.monotonic()
    slow = asyncio.create_task(_guarded(deadlines, 50 * unit))
    fast = [asyncio.create_task(_guarded(deadlines, unit * i / 20)) for i in range(20)]  # done within 1 unit
    assert await asyncio.gather(*fast) == ["done"] * 20
    assert await slow == "timeout"
    assert 1.95 * unit <= time.monotonic() - began < 10 * unit
    assert slow.cancelling() == 0  # the timeout's cancellation was withdrawn, as asyncio.timeout does
    await eventually(lambda: len(deadlines) == 0)  # finished and expired records are gone
    deadlines.close()


async def test_each_request_has_its_own_deadline() -> None:
    unit = patience(0.1)
    deadlines = Deadlines(3 * unit, period=unit / 2)
    first = asyncio.create_task(_guarded(deadlines, 50 * unit))
    await asyncio.sleep(2 * unit)  # the second starts later: its deadline is later (what is tested)
    second = asyncio.create_task(_guarded(deadlines, 2 * unit))  # due at 5 units, done at 4
    began = time.monotonic()
    assert await first == "timeout"  # at 3 units, not at the second's deadline
    assert time.monotonic() - began < 2 * unit
    assert await second == "done"
    deadlines.close()


async def test_a_cancellation_from_elsewhere_is_not_a_timeout() -> None:
    deadlines = Deadlines(5)
    task = asyncio.create_task(_guarded(deadlines, 5))
    await eventually(lambda: len(deadlines) == 1)  # the request has begun
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
    await eventually(lambda: len(deadlines) == 1)  # the stuck request has begun
    for _ in range(5000):  # requests that start and end without the loop running in between
        entry = deadlines.start()
        assert entry is not None and entry.finish() is False
    assert len(deadlines) == 5001
    # Compacted (every period, 0.01 s) although the oldest request still runs.
    await eventually(lambda: len(deadlines) == 1)
    assert not stuck.done()
    stuck.cancel()
    deadlines.close()


async def test_slow_request_is_504_while_fast_ones_are_answered(tmp_path: Path) -> None:
    slow_source = MemorySource([VM], delay=30)
    async with running_server(slow_source, tmp_path, request_timeout=0.3) as srv:
        began = time.monotonic()
        replies = await asyncio.gather(*(srv.get(vm_path(name="vm1")) for _ in range(3)))
        elapsed = time.monotonic() - began
        metrics = (await srv.get("/metrics")).body.decode()
    assert [r.status for r in replies] == [504] * 3
    assert all(r.json()["reason"] == "Timeout" and r.headers["retry-after"] == "1" for r in replies)
    assert elapsed < min(patience(1.5), 20)  # cut at 0.3 s, not after the source's 30 s
    assert "kubevirt_expand_http_requests_in_flight 1.0" in metrics  # only the /metrics request itself
    assert 'code="504"' in metrics
