"""Request deadlines kept by one sweeper instead of a timer per request.

``asyncio.timeout`` schedules a timer for every request and cancels it when the request ends: a heap
push, a handle and two context-manager calls, a sizeable share of a request answered from the response
cache. Every request here gets the same limit, so the deadlines arrive in the order the requests
started: a FIFO of small records is already sorted. One timer at a time walks it from the oldest end,
drops finished records, and cancels the task of every request past its deadline; the request then
turns the cancellation into :class:`TimeoutError`, as ``asyncio.timeout`` would.

The sweeper wakes at the oldest running request's deadline, and at least every ``period`` seconds
while requests come in so that finished records do not pile up.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any


class Deadline:
    """One request's entry: when it is due, its task, and whether it ended or was cancelled."""

    __slots__ = ("cancelling", "done", "due", "expired", "task")

    def __init__(self, due: float, task: asyncio.Task[Any], cancelling: int) -> None:
        self.due = due
        self.task: asyncio.Task[Any] | None = task
        self.cancelling = cancelling  # the task's cancel requests before ours, as asyncio.timeout keeps
        self.done = False
        self.expired = False

    def finish(self) -> bool:
        """Mark the request ended; True when it was cancelled for its deadline and nobody else
        cancelled it (the cancellation is then a timeout, and has been withdrawn from the task)."""
        self.done = True
        task, self.task = self.task, None  # a finished record must not keep the request alive
        if not self.expired or task is None:
            return False
        return task.uncancel() <= self.cancelling


class Deadlines:
    """Deadlines of the requests in flight, all ``limit`` seconds after they start."""

    def __init__(self, limit: float, period: float = 0.25) -> None:
        self.limit = limit
        self.period = max(0.001, min(period, limit))
        self._queue: deque[Deadline] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> Deadline | None:
        """Register the current task (None outside a task: nothing to cancel, no deadline)."""
        # The current task of the loop the last request ran on: asking for the running loop instead
        # costs a system call on Python 3.11 (the loop is checked against the process id). A loop that
        # is not running has no current task, so a stale one falls through to the full lookup.
        task = asyncio.current_task(self._loop) if self._loop is not None else None
        if task is None:
            task = asyncio.current_task()
            if task is None:
                return None
        loop = task.get_loop()
        entry = Deadline(loop.time() + self.limit, task, task.cancelling())
        self._queue.append(entry)
        if self._timer is None or self._loop is not loop:
            if self._loop is not loop:  # the app moved to another loop: the old one's tasks are gone
                self._queue.clear()
                self._queue.append(entry)
                self._loop = loop
            self._timer = loop.call_at(min(entry.due, loop.time() + self.period), self._sweep, loop)
        return entry

    def __len__(self) -> int:
        """Records still queued (finished ones leave at the next sweep)."""
        return len(self._queue)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self._loop:
            return
        self._timer = None
        queue = self._queue
        now = loop.time()
        while queue:
            head = queue[0]
            if head.done:
                queue.popleft()
            elif head.due <= now:
                queue.popleft()
                head.expired = True
                if head.task is not None:
                    head.task.cancel()
            else:
                break
        if not queue:
            return
        # A request stuck at the head keeps finished records behind it: drop them now and then.
        if len(queue) > 1024:
            live = [entry for entry in queue if not entry.done]
            if len(live) * 4 < len(queue):
                queue.clear()
                queue.extend(live)
        self._timer = loop.call_at(min(queue[0].due, now + self.period), self._sweep, loop)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._queue.clear()
