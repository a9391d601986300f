"""A small TTL cache whose misses for the same key share one computation (one review, not ten)."""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class TTLCache(Generic[V]):
    """Values expire ``ttl(value)`` seconds after they were computed; errors are never cached.

    ``epoch`` changes whenever an entry goes before its time (``clear``, or evicted for room), so that a
    memo of an answer may rely on ``peek``'s expiry only while the epoch it saw is current. The epoch
    is one count across every cache: a memo resting on several caches compares a single number.
    """

    epoch = 0

    def __init__(self, ttl: Callable[[V], float], max_entries: int = 4096) -> None:
        self._ttl = ttl
        self._max = max_entries
        self._entries: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()
        self._inflight: dict[Hashable, asyncio.Future[V]] = {}
        # Lookups answered from the cache (or by a computation already under way), and computed.
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        self._entries.clear()
        TTLCache.epoch += 1

    def peek(self, key: Hashable) -> tuple[float, V] | None:
        """(expiry on the ``time.monotonic`` clock, value) of a live entry, else None."""
        entry = self._entries.get(key)
        if entry is None or entry[0] <= time.monotonic():
            return None
        return entry

    def __len__(self) -> int:
        return len(self._entries)

    async def get_until(self, key: Hashable, compute: Callable[[], Awaitable[V]]) -> tuple[V, float]:
        """``get``, and until when (``time.monotonic``) the answer is cached; -inf when it is not."""
        value = await self.get(key, compute)
        entry = self.peek(key)
        return value, entry[0] if entry is not None and entry[1] is value else -math.inf

    async def get(self, key: Hashable, compute: Callable[[], Awaitable[V]]) -> V:
        now = time.monotonic()
        entry = self._entries.get(key)
        if entry is not None:
            if entry[0] > now:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[1]
            del self._entries[key]
        pending = self._inflight.get(key)
        if pending is not None:
            self.hits += 1
            return await asyncio.shield(pending)
        self.misses += 1
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            value = await compute()
        except asyncio.CancelledError:
            future.set_exception(RuntimeError("the request that started this review was cancelled"))
            future.exception()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, nobody else must see it as unhandled
            raise
        finally:
            del self._inflight[key]
        future.set_result(value)
        ttl = self._ttl(value)
        if ttl > 0:
            self._entries[key] = (time.monotonic() + ttl, value)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
                TTLCache.epoch += 1
        return value
