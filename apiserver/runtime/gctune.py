"""Keep CPython's full garbage collections short by freezing the long-lived heap out of them.

Why: most of a serving process's objects live as long as it does (imported modules, compiled codecs,
the OpenAPI documents, and with the cluster source the watch caches: about 130,000 containers with
10,000 cached instancetypes). A full (generation 2) collection walks every one of them with the event
loop stopped; under load one came every few seconds and took 30-40 ms (folder of examples) to 70-80 ms
(10,000 cached objects), which is what the p99 latency was made of. ``gc.freeze()`` moves every tracked object into a permanent generation that
collections skip. Frozen objects are still freed by reference counting when dropped (cached JSON holds
no reference cycles); only a cycle that becomes garbage after being frozen stays in memory.

Two moments to freeze, both right after a full collection so that nothing but live objects is frozen:
once the source reports ready (caches synced, folder read), and again whenever a later full collection
still takes longer than ``budget`` (the caches grew or were re-listed), at most once per ``min_interval``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class _Check(Protocol):
    @property
    def ok(self) -> bool: ...


class Readiness(Protocol):
    """What :meth:`GCTuner.run` needs of a source (apiserver.sources.base.Source has it): whether it has
    loaded its objects."""

    def checks(self) -> Sequence[_Check]: ...


_log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(slots=True)
class GCStats:
    """What the tuner saw: full collections (ours excepted), the longest one, and the freezes."""

    full_collections: int = 0
    longest_full_ms: float = 0.0
    freezes: int = 0


class GCTuner:
    """Times full collections through ``gc.callbacks`` and freezes what survives the slow ones."""

    def __init__(
        self, *, budget_ms: float = 10.0, min_interval: float = 60.0, clock: Clock = time.monotonic
    ) -> None:
        self.budget_ms = budget_ms
        self.min_interval = min_interval
        self.clock = clock
        self.stats = GCStats()
        self._started = 0.0
        self._last_freeze: float | None = None
        self._installed = False
        self._collecting = False  # our own collection: freeze() freezes after it
        self._messages: list[tuple[Any, ...]] = []

    def install(self) -> None:
        if not self._installed:
            gc.callbacks.append(self._callback)
            self._installed = True

    def uninstall(self) -> None:
        if self._installed:
            gc.callbacks.remove(self._callback)
            self._installed = False

    def freeze(self, reason: str) -> None:
        """A full collection, then everything that survived it is frozen."""
        started = time.perf_counter()
        self._collecting = True
        try:
            gc.collect()
        finally:
            self._collecting = False
        took = (time.perf_counter() - started) * 1e3
        self._freeze()
        # Counting walks the whole permanent generation (~10 ms per 100,000 objects): here only.
        count = gc.get_freeze_count()
        message = "garbage collector: froze %d long-lived objects %s (full collection %.0f ms)"
        self._messages.append((message, count, reason, took))
        self.flush_log()

    async def run(self, source: Readiness, poll: float = 0.2, report: float = 5.0) -> None:
        """Freeze once every readiness check of ``source`` passes (its objects are loaded by then),
        then log the freezes the callback made (it must not log itself: it may run inside a handler)."""
        while not all(check.ok for check in source.checks()):  # noqa: ASYNC110 - a source offers no event
            await asyncio.sleep(poll)
        self.freeze("once the source was ready")
        while True:
            self.flush_log()
            await asyncio.sleep(report)

    def flush_log(self) -> None:
        while self._messages:
            _log.info(*self._messages.pop(0))

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        # Runs inside whatever allocation triggered the collection, in any thread: no I/O, no locks.
        if info.get("generation") != 2 or self._collecting:
            return
        if phase == "start":
            self._started = time.perf_counter()
            return
        took = (time.perf_counter() - self._started) * 1e3
        self.stats.full_collections += 1
        self.stats.longest_full_ms = max(self.stats.longest_full_ms, took)
        if took <= self.budget_ms:
            return
        now = self.clock()
        if self._last_freeze is not None and now - self._last_freeze < self.min_interval:
            return
        # The collection is over and only its survivors are left in the generations: freeze them.
        self._freeze()
        self._messages.append(
            ("garbage collector: froze the survivors of a full collection of %.0f ms", took)
        )

    def _freeze(self) -> None:
        gc.freeze()  # constant time: the generations' lists are spliced onto the permanent one
        self._last_freeze = self.clock()
        self.stats.freezes += 1
