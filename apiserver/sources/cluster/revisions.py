"""A bounded LRU of ControllerRevisions by name.

Revisions are immutable, so a found one is good until evicted. A missing one is remembered only for a
moment: the VM controller may create it right after a VM names it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

_ABSENT = object()


class RevisionCache:
    def __init__(self, max_size: int = 4096, negative_ttl: float = 1.0) -> None:
        self.max_size = max_size
        self.negative_ttl = negative_ttl
        self._items: OrderedDict[tuple[str, str], tuple[dict[str, Any] | None, float]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def lookup(self, namespace: str, name: str) -> Any:
        """The revision, None when it is known to be missing, or ``ABSENT`` when it must be read."""
        key = (namespace, name)
        entry = self._items.get(key)
        if entry is None or (entry[0] is None and entry[1] < time.monotonic()):
            self._items.pop(key, None)
            self.misses += 1
            return _ABSENT
        self._items.move_to_end(key)
        self.hits += 1
        return entry[0]

    def peek(self, namespace: str, name: str) -> Any:
        """Like :meth:`lookup`, but a miss is not counted (the read that follows counts it)."""
        key = (namespace, name)
        entry = self._items.get(key)
        if entry is None or (entry[0] is None and entry[1] < time.monotonic()):
            return _ABSENT
        self._items.move_to_end(key)
        self.hits += 1
        return entry[0]

    def put(self, namespace: str, name: str, obj: dict[str, Any] | None) -> None:
        expires = float("inf") if obj is not None else time.monotonic() + self.negative_ttl
        self._items[(namespace, name)] = (obj, expires)
        self._items.move_to_end((namespace, name))
        while len(self._items) > self.max_size:
            self._items.popitem(last=False)


ABSENT = _ABSENT
