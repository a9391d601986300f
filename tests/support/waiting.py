"""Waiting in a test for something that will happen, instead of sleeping a fixed time.

A fixed sleep before an assertion passes on a slow machine without proving anything (the thing waited for
has not happened yet) and costs its full length on a fast one. These wait for the event that matters and
return as soon as it holds; their deadline, scaled by :func:`~tests.support.patience.patience`, only
decides how long a broken run takes to fail.

- :func:`eventually`: a condition (a plain function) in a coroutine test;
- :func:`eventually_value`: an awaited reading (a metric from ``/metrics``, a reply) accepted by a predicate;
- :func:`poll`: the same for blocking code (the real control plane's tests, threads), from devcluster.

A test that asserts something did *not* happen first waits with one of these for a positive sign that the
thing under test is where it would have happened (the watch registered, the change seen), then asserts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from devcluster.controlplane import poll
from tests.support.patience import patience

__all__ = ["eventually", "eventually_value", "poll"]

T = TypeVar("T")

INTERVAL = 0.005  # between two checks: a check is a few attribute reads


async def eventually(check: Callable[[], object], within: float = 5.0, what: str = "condition") -> float:
    """Return once ``check()`` is true, with how long it took; TimeoutError after ``within`` seconds (scaled
    for the machine's load)."""
    start, within = time.monotonic(), patience(within)
    while not check():
        if time.monotonic() - start > within:
            raise TimeoutError(f"{what} not met within {within:.1f}s")
        await asyncio.sleep(INTERVAL)
    return time.monotonic() - start


async def eventually_value(
    read: Callable[[], Awaitable[T]],
    accept: Callable[[T], bool],
    within: float = 5.0,
    what: str = "value",
    interval: float = 0.02,
) -> T:
    """What ``read()`` returns once ``accept`` takes it; TimeoutError, naming the last value read, after
    ``within`` seconds (scaled for the machine's load)."""
    start, within = time.monotonic(), patience(within)
    while True:
        value = await read()
        if accept(value):
            return value
        if time.monotonic() - start > within:
            raise TimeoutError(f"{what} not accepted within {within:.1f}s; last read: {value!r}")
        await asyncio.sleep(interval)
