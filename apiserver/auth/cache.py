"""A small TTL cache whose misses for the same key share one computation (one review, not ten), and
whose values still in use near their end are renewed ahead, in the background.

Renewal ahead: a lookup that finds a value in the last part of its time (``renew_within`` of it), and
which ``renew`` says may be renewed (an allow, a good token: never a refusal), answers with that value,
still valid, and starts one computation of the key in the background (at most ``max_renewals`` at
once; beyond, none, and a later lookup tries again). Its answer replaces the entry with a time of its
own; a value is never served past its own time, and a renewal that fails leaves the entry to expire as
it would have. So a key used all the time is computed again every ``(1 - renew_within) * ttl`` or so,
off the path of the requests using it, instead of stopping them all when it expires; a key used now and
then costs what it did.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from functools import partial
from typing import Generic, NamedTuple, TypeVar

V = TypeVar("V")

log = logging.getLogger(__name__)

# The last fifth of a value's time: with the 10 s TTLs, a value in use is renewed after 8 s.
DEFAULT_RENEW_WITHIN = 0.2
DEFAULT_MAX_RENEWALS = 8


class Held(NamedTuple, Generic[V]):
    """An answer, until when it stands and from when a use of it should renew it (the cache's clock;
    -inf for an answer not cached), and what starts that renewal (None: never renewed): a memo resting
    on the answer calls ``renew`` when it is used past ``renew_at``, as a lookup would."""

    value: V
    until: float
    renew_at: float = math.inf
    renew: Callable[[], None] | None = None


class TTLCache(Generic[V]):
    """Values expire ``ttl(value)`` seconds after they were computed; errors are never cached.

    ``epoch`` changes whenever an entry goes before its time (``clear``, or evicted for room) or a
    renewal finds a different answer, so that a memo of an answer may rely on ``peek``'s expiry only
    while the epoch it saw is current. The epoch is one count across every cache: a memo resting on
    several caches compares a single number.
    """

    epoch = 0

    def __init__(
        self,
        ttl: Callable[[V], float],
        max_entries: int = 4096,
        *,
        renew: Callable[[V], bool] | None = None,
        renew_within: float = DEFAULT_RENEW_WITHIN,
        max_renewals: int = DEFAULT_MAX_RENEWALS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl
        self._max = max_entries
        self._renew = renew
        self._renew_within = renew_within
        self._max_renewals = max_renewals
        self._clock = clock
        # key -> (expiry, value, when a lookup starts renewing it)
        self._entries: OrderedDict[Hashable, tuple[float, V, float]] = OrderedDict()
        self._inflight: dict[Hashable, asyncio.Future[V]] = {}
        self._renewals: dict[Hashable, asyncio.Future[V]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # Lookups answered from the cache (or by a computation already under way), computed on a
        # lookup's path, and renewals started in the background.
        self.hits = 0
        self.misses = 0
        self.renewed = 0

    def clear(self) -> None:
        self._entries.clear()
        TTLCache.epoch += 1

    def peek(self, key: Hashable) -> tuple[float, V] | None:
        """(expiry on the cache's clock, ``time.monotonic`` unless given, value) of a live entry, else None."""
        entry = self._entries.get(key)
        if entry is None or entry[0] <= self._clock():
            return None
        return entry[0], entry[1]

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def renewing(self) -> int:
        """Renewals under way."""
        return len(self._renewals)

    async def get_until(self, key: Hashable, compute: Callable[[], Awaitable[V]]) -> Held[V]:
        """``get``, until when the answer is cached (-inf when it is not), and how a memo of it renews it."""
        value = await self.get(key, compute)
        entry = self._entries.get(key)
        if entry is None or entry[1] is not value or entry[0] <= self._clock():
            return Held(value, -math.inf)
        renew = partial(self._renew_ahead, key, compute, value) if self._renew is not None else None
        return Held(value, entry[0], entry[2], renew)

    async def get(self, key: Hashable, compute: Callable[[], Awaitable[V]]) -> V:
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None:
            if entry[0] > now:
                self._entries.move_to_end(key)
                self.hits += 1
                if entry[2] <= now and self._renew is not None:
                    self._renew_ahead(key, compute, entry[1])
                return entry[1]
            del self._entries[key]
        renewal = self._renewals.get(key)
        if renewal is not None:
            # Expired while its renewal is under way: that answer, unless it fails (then this lookup's own).
            try:
                value = await asyncio.shield(renewal)
            except Exception:  # logged by the renewal; asked again below
                pass
            else:
                self.hits += 1
                return value
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
        self._put(key, value)
        return value

    def _put(self, key: Hashable, value: V) -> None:
        ttl = self._ttl(value)
        if ttl > 0:
            now = self._clock()
            self._entries[key] = (now + ttl, value, now + ttl * (1 - self._renew_within))
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
                TTLCache.epoch += 1

    def _renew_ahead(self, key: Hashable, compute: Callable[[], Awaitable[V]], old: V) -> None:
        """Start renewing ``key`` when its entry is still ``old``, in its last part and not expired,
        unless its renewal is under way, ``old`` may not be renewed, or too many renewals are."""
        if self._renew is None or key in self._renewals or key in self._inflight:
            return
        entry = self._entries.get(key)
        if entry is None or entry[1] is not old or len(self._renewals) >= self._max_renewals:
            return
        now = self._clock()
        if not entry[2] <= now < entry[0] or not self._renew(old):
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[V] = loop.create_future()
        self._renewals[key] = future
        self.renewed += 1
        task = loop.create_task(self._renewing(key, compute, old, future))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _renewing(
        self, key: Hashable, compute: Callable[[], Awaitable[V]], old: V, future: asyncio.Future[V]
    ) -> None:
        try:
            value = await compute()
        except BaseException as exc:
            future.set_exception(RuntimeError(f"renewal failed: {exc}"))
            future.exception()
            if isinstance(exc, asyncio.CancelledError):
                raise
            log.info("renewing a cached answer ahead failed (it expires as it would have): %s", exc)
            return
        finally:
            del self._renewals[key]
        future.set_result(value)
        current = self._entries.get(key)
        if current is not None and current[1] is not old:
            return  # computed afresh meanwhile (the old one expired and a lookup asked): that one stands
        if value != old:
            # Another answer now (a permission taken away, a token no longer good): what rested on the
            # old one goes at once instead of at its time.
            self._entries.pop(key, None)
            TTLCache.epoch += 1
        self._put(key, value)
