"""A small TTL cache whose misses for the same key share one computation (one review, not ten)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class TTLCache(Generic[V]):
    """Values expire ``ttl(value)`` seconds after they were computed; errors are never cached."""

    def __init__(self, ttl: Callable[[V], float], max_entries: int = 4096) -> None:
        self._ttl = ttl
        self._max = max_entries
        self._entries: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()
        self._inflight: dict[Hashable, asyncio.Future[V]] = {}

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: Hashable, compute: Callable[[], Awaitable[V]]) -> V:
        now = time.monotonic()
        entry = self._entries.get(key)
        if entry is not None:
            if entry[0] > now:
                self._entries.move_to_end(key)
                return entry[1]
            del self._entries[key]
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
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
        return value
